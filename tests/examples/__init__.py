"""Tests of the examples part."""

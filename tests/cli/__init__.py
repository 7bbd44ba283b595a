"""Tests of the cli part."""

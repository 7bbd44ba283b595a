"""Tests of the docker part."""

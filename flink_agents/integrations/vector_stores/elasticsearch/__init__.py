"""Elasticsearch and OpenSearch vector stores."""

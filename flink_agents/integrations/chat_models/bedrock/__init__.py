"""Amazon Bedrock chat models."""

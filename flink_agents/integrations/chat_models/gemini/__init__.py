"""Google Gemini chat models (Gemini API and Vertex AI)."""

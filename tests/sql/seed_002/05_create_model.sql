CREATE MODEL openai
INPUT(text STRING)
OUTPUT (res STRING)
WITH (
  'provider' = 'openai',
  'model' = 'gpt-4o',
  'api_key' = 'some-key'
)

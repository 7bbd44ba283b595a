CREATE TEMPORARY VIEW city_table AS SELECT * FROM (VALUES
  ('s1', 'Paris'), ('s2', 'London'), ('s1', 'Rome')) AS t(session_id, city);
DROP MODEL openai;
CREATE MODEL openai
INPUT(text STRING)
OUTPUT (res STRING)
WITH (
  'provider' = 'openai',
  'model' = 'gpt-4o',
  'api_key' = 'some-key',
  'endpoint' = '{openai_endpoint}'
)

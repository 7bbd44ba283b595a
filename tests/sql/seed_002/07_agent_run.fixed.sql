CREATE TEMPORARY VIEW city_table AS SELECT * FROM (VALUES
  ('s1', 'Paris'), ('s2', 'London'), ('s1', 'Rome')) AS t(session_id, city);
ALTER MODEL openai SET ('endpoint' = '{openai_endpoint}')

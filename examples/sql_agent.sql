-- A support agent in SQL: a Python function becomes a tool, a model of Flink's catalog
-- drives the agent, and agent_run answers every row of a table.
--
-- Run from the repository root:   flink-agents sql -f examples/sql_agent.sql
-- The model is the scripted stand-in of examples/sql_agent.py (offline, deterministic);
-- see that file for the line that points the same script at a real model.

-- 1. A Python function of Flink's catalog, and a tool over it.
CREATE TEMPORARY FUNCTION order_status AS 'examples.sql_agent.order_status' LANGUAGE PYTHON;

CREATE TEMPORARY TOOL order_status
  USING FUNCTION order_status
  COMMENT 'Looks up an order'
  WITH ('description' = 'The delivery status of an order, by order number');

-- 2. A model of Flink's catalog (its options map onto our chat model connections).
CREATE TEMPORARY MODEL support_llm
  WITH ('provider' = 'scripted', 'respond' = 'examples.sql_agent:support_model');

-- 3. The agent: model + system prompt + tools.
CREATE TEMPORARY AGENT support
  USING MODEL support_llm
  USING PROMPT 'You answer customer questions about their orders. Be brief.'
  USING TOOLS order_status
  COMMENT 'first-line support'
  WITH ('max-iterations' = '4', 'memory-turns' = '5');

SHOW TOOLS;
DESC AGENT support;

-- 4. The questions, and the agent over them: rows of one customer run in order and the
--    agent remembers the customer's earlier questions (PARTITION BY).
CREATE TEMPORARY VIEW tickets AS
SELECT * FROM (VALUES
  (1, 'ann', 'Where is my order A100?'),
  (2, 'bob', 'Has B200 shipped yet?'),
  (3, 'ann', 'And when will it arrive?'),
  (4, 'cid', 'Hello, is anyone there?')
) AS t(ticket_id, customer, message);

CREATE TEMPORARY VIEW answers AS
SELECT ticket_id, customer, agent_output AS answer
FROM agent_run(
  INPUT => TABLE tickets PARTITION BY customer,
  AGENT => AGENT support,
  COL => DESCRIPTOR(message),
  CONFIG => MAP['error-handling-strategy', 'fail']);

SELECT * FROM answers;

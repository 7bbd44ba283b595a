"""Skills at run time: loading ``SKILL.md`` sources (:mod:`.skill_source_registry`), the
per-slot :class:`~.skill_manager.SkillManager` and the ``load_skill`` tool
(:mod:`.skill_tools`). Declaring skills is the API's (:mod:`flink_agents.api.skills`); the
``bash`` tool is :mod:`flink_agents.plan.tools.bash`."""

"""Drop-in memory for agent frameworks: ``openai_agents`` (a ``Session``) and ``langgraph``
(a ``BaseStore``)."""

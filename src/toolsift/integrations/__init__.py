"""toolsift inside the agent frameworks and LLM SDKs people already use.

Each module needs its own optional extra and imports its framework only when imported:

* :mod:`toolsift.integrations.openai` (extra ``openai``): a drop-in wrapper around the
  official ``openai`` client; the model sees a ``tool_search`` tool plus the tools found
  so far instead of the whole catalogue.
* :mod:`toolsift.integrations.anthropic` (extra ``anthropic``): the same for the
  official ``anthropic`` client's Messages API.
* :mod:`toolsift.integrations.langchain` (extra ``langchain``): a LangChain
  ``BaseRetriever`` over a :class:`~toolsift.ToolIndex`.
* :mod:`toolsift.integrations.langgraph` (extra ``langgraph``): the ``retrieve_tools``
  function that ``langgraph_bigtool.create_agent`` takes.
* :mod:`toolsift.integrations.llama_index` (extra ``llama-index``): a LlamaIndex
  retriever returning ``NodeWithScore`` and an object retriever returning tools.

(:mod:`toolsift.adapters.langchain` is the other direction: it *reads* LangChain tools
into toolsift tools.)
"""

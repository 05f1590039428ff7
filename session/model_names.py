"""Model strings checked at start, without importing pydantic-ai: ``offline``, ``provider:name``."""

from __future__ import annotations

from typing import Final

OFFLINE: Final = "offline"

# The provider prefixes pydantic-ai 2.x resolves (``infer_provider_class``), plus its
# ``gateway/<provider>`` form; kept here so the terminal can check a model string in
# microseconds instead of importing pydantic-ai (600 ms).
KNOWN_PROVIDERS: Final = frozenset(
    {
        "alibaba",
        "anthropic",
        "azure",
        "azure-responses",
        "bedrock",
        "bedrock-mantle",
        "cerebras",
        "cohere",
        "crusoe",
        "deepseek",
        "fireworks",
        "github",
        "github-copilot",
        "google",
        "google-cloud",
        "google-decisions",
        "groq",
        "heroku",
        "huggingface",
        "litellm",
        "meta",
        "mistral",
        "moonshotai",
        "nebius",
        "ollama",
        "openai",
        "openai-chat",
        "openai-chatgpt",
        "openai-codex",
        "openai-decisions",
        "openai-responses",
        "openrouter",
        "ovhcloud",
        "sambanova",
        "snowflake",
        "system-one",
        "together",
        "typesafe",
        "vercel",
        "vllm",
        "xai",
        "zai",
    }
)
# Strings pydantic-ai accepts without a provider prefix.
BARE_NAMES: Final = frozenset({OFFLINE, "test"})

ACCEPTED_FORMS: Final = (
    "offline (built in, no network), openai-chat:NAME (Chat Completions at OPENAI_BASE_URL), "
    "or a pydantic-ai provider:name such as anthropic:claude-sonnet-4-5"
)


def model_problem(model: str) -> str | None:
    """Why ``model`` cannot be a model string (one clause), or None if it looks usable."""
    if model in BARE_NAMES:
        return None
    provider, colon, name = model.partition(":")
    if not colon:
        return "it has no provider prefix"
    if not name.strip():
        return "the model name after the colon is missing"
    base = provider.removeprefix("gateway/")
    if base not in KNOWN_PROVIDERS:
        return f"{provider!r} is not a provider pydantic-ai knows"
    return None


def check_model(model: str, source: str) -> str | None:
    """One line for an unusable model (naming it, where it came from and the accepted
    forms), or None."""
    problem = model_problem(model)
    if problem is None:
        return None
    return f"error: unknown model {model!r} from {source} ({problem}); use {ACCEPTED_FORMS}"

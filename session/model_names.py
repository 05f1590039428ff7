"""Model strings checked at start, without importing pydantic-ai: ``offline``, ``provider:name``."""

from __future__ import annotations

from typing import Final

OFFLINE: Final = "offline"
MAX_MODEL_CHARS: Final = 256  # as the protocol's hello accepts

# Strings pydantic-ai accepts without a provider prefix.
BARE_NAMES: Final = frozenset({OFFLINE, "test"})

ACCEPTED_FORMS: Final = (
    "offline (built in, no network), openai-chat:NAME (Chat Completions at OPENAI_BASE_URL), "
    "or a pydantic-ai provider:name such as anthropic:claude-sonnet-4-5 (a provider "
    "needs its SDK installed beside agent-assist, here: pip install anthropic)"
)

_OPENAI_SDK: Final = ("openai", "openai")
# provider prefix -> (module to look for, package to install): what pydantic-ai's provider
# imports (its "Please install ..." errors), checked with importlib.util.find_spec.
PROVIDER_SDKS: Final[dict[str, tuple[str, str]]] = {
    **{
        name: _OPENAI_SDK
        for name in (
            "alibaba",
            "azure",
            "azure-responses",
            "cerebras",
            "crusoe",
            "deepseek",
            "fireworks",
            "github",
            "github-copilot",
            "heroku",
            "litellm",
            "meta",
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
            "otari",
            "ovhcloud",
            "sambanova",
            "snowflake",
            "stav",
            "together",
            "vercel",
            "vllm",
            "zai",
        )
    },
    "anthropic": ("anthropic", "anthropic"),
    "bedrock": ("boto3", "boto3"),
    "cohere": ("cohere", "cohere"),
    "google": ("google.genai", "google-genai"),
    "google-cloud": ("google.genai", "google-genai"),
    "google-interactions": ("google.genai", "google-genai"),
    "groq": ("groq", "groq"),
    "huggingface": ("huggingface_hub", "huggingface_hub"),
    "mistral": ("mistralai", "mistralai"),
    "xai": ("xai_sdk", "xai-sdk"),
}

# The provider prefixes pydantic-ai 2.x resolves (``infer_provider_class``), plus its
# ``gateway/<provider>`` form; kept here so the terminal can check a model string in
# microseconds instead of importing pydantic-ai (600 ms). Those whose SDK is not known
# here are found at the first turn.
KNOWN_PROVIDERS: Final = frozenset(PROVIDER_SDKS) | {
    "bedrock-mantle",
    "cloudflare",  # Workers AI over httpx: no SDK
    "cloudflare-decisions",
    "google-decisions",
    "system-one",
    "typesafe",
}


def model_problem(model: str) -> str | None:
    """Why ``model`` cannot be a model string (one clause), or None if it looks usable."""
    if model in BARE_NAMES:
        return None
    if len(model) > MAX_MODEL_CHARS:
        return f"it is over {MAX_MODEL_CHARS} characters"
    provider, colon, name = model.partition(":")
    if not colon:
        return "it has no provider prefix"
    if not name.strip():
        return "the model name after the colon is missing"
    base = provider.removeprefix("gateway/")
    if base not in KNOWN_PROVIDERS:
        return f"{provider!r} is not a provider pydantic-ai knows"
    return None


def check_model(model: str, source: str, setting: str = "model") -> str | None:
    """One line for an unusable model (naming the setting, the model, where it came from
    and the accepted forms), or None."""
    problem = model_problem(model)
    if problem is None:
        return None
    from session.redaction import scrub_text  # only on this error's path: its patterns cost

    # scrubbed: a key pasted into the wrong variable (AGENT_ASSIST_MODEL=sk-...) is not shown
    line = f"error: unknown {setting} {model!r} from {source} ({problem}); use {ACCEPTED_FORMS}"
    return scrub_text(line)


def _installed(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False


def missing_sdk(model: str, source: str) -> str | None:
    """One line when ``model``'s provider needs an SDK that is not installed (found without
    importing it or pydantic-ai), or None."""
    provider, colon, _ = model.partition(":")
    sdk = PROVIDER_SDKS.get(provider.removeprefix("gateway/")) if colon else None
    if sdk is None or _installed(sdk[0]):
        return None
    package = sdk[1]
    return (
        f"error: model {model!r} from {source} needs the {package} package, which is not "
        f"installed; install it where agent-assist is installed (pip install {package}, "
        f"or pipx inject agent-assist {package}), then run agent-assist supervisor stop"
    )

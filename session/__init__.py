"""The domain core of agent-assist: session models, storage and pure transitions."""

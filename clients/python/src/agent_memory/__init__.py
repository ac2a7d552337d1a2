"""``agent_memory``: agent-memory's ``memory serve`` from Python, sync and async, with the
session, context, profile and job methods named as in the Rust and TypeScript APIs.

>>> from agent_memory import MemoryClient
>>> memory = MemoryClient("http://127.0.0.1:8787")
>>> memory.profile("alice").remember("Prefers window seats", key="seat")
"""

from ._async_client import AsyncMemoryClient, AsyncProfile, AsyncSession, AsyncSessionManager
from ._sync_client import MemoryClient, Profile, Session, SessionManager
from ._transport import DEFAULT_BASE_URL, retry_after_seconds
from .errors import (
    AgentMemoryError,
    ApiError,
    ConflictError,
    ConnectionError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    RefusedError,
    TimeoutError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
)
from .tools import AsyncTool, Tool, async_session_tools, session_tools

__all__ = [
    "DEFAULT_BASE_URL",
    "AgentMemoryError",
    "ApiError",
    "AsyncMemoryClient",
    "AsyncProfile",
    "AsyncSession",
    "AsyncSessionManager",
    "AsyncTool",
    "ConflictError",
    "ConnectionError",
    "ForbiddenError",
    "InvalidInputError",
    "MemoryClient",
    "NotFoundError",
    "NotSupportedError",
    "Profile",
    "RateLimitedError",
    "RefusedError",
    "Session",
    "SessionManager",
    "TimeoutError",
    "TooLargeError",
    "Tool",
    "UnauthorizedError",
    "UnavailableError",
    "async_session_tools",
    "retry_after_seconds",
    "session_tools",
]

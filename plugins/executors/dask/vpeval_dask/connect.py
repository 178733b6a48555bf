"""Connecting to a Dask scheduler at an address, bounded in time whatever answers there.

distributed's `Client(address, timeout=...)` bounds the TCP connect, but then waits without limit for
the peer's handshake, and decodes whatever bytes come back as a message length (garbage can ask for
exabytes: MemoryError). So the address is first identified in a short-lived event loop under one
wall-clock deadline (connect, handshake, an `identity` request; the connection is aborted on every
way out), and the Client itself is opened under the same kind of deadline. Every failure is one
sentence (PluginError) naming the address, what answered and what to do.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from vpeval.errors import PluginError

T = TypeVar("T")

TO_DO = "start the scheduler (`dask scheduler` prints its address) or correct `executor.params.address`"


def open_client(address: str, timeout: float):
    """A distributed Client of the scheduler at address, in at most about 2 x timeout seconds, or PluginError."""
    from distributed import Client

    kind = identify(address, timeout)
    if "Scheduler" not in kind:
        raise PluginError(
            f"executor dask: no Dask scheduler at {address}: a Dask {kind} answers there, not a scheduler; "
            f"give the scheduler's address in `executor.params.address`."
        )
    try:
        return call_with_deadline(lambda: Client(address, timeout=f"{timeout}s"), timeout + 1.0)
    except TimeoutError:
        raise PluginError(
            f"executor dask: no Dask scheduler at {address}: it identified itself as a scheduler, then "
            f"did not accept the client within {timeout:g} s; check the scheduler's log and the "
            f"versions of dask and distributed on both sides."
        ) from None
    except Exception as exc:  # OSError, ValueError, ImportError (version mismatch), whatever the peer sent
        raise PluginError(
            f"executor dask: no Dask scheduler at {address}: connecting failed ({describe(exc)}); {TO_DO}."
        ) from None


def identify(address: str, timeout: float) -> str:
    """The `type` the Dask server at address gives for itself (Scheduler, Worker, Nanny), within timeout
    seconds, or PluginError saying what was there instead."""
    from distributed.comm import CommClosedError
    from distributed.comm.addressing import get_address_host_port, normalize_address

    try:
        address = normalize_address(address)  # 10.0.0.5:8786 -> tcp://10.0.0.5:8786, as Client reads it
        endpoint = get_address_host_port(address) if address.startswith(("tcp://", "tls://")) else None
    except (ValueError, TypeError) as exc:
        raise PluginError(
            f"executor dask: the scheduler address {address!r} cannot be used ({describe(exc)}); "
            "write it as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786."
        ) from None
    stage: list[str] = ["connect"]  # how far the exchange got, for the sentence
    try:
        reply = call_with_deadline(
            lambda: asyncio.run(asyncio.wait_for(_identity(address, endpoint, timeout, stage), timeout)), timeout + 1.0
        )
    except TimeoutError:
        if stage[0] == "connect":
            what = f"nothing accepted a connection within {timeout:g} s"
        else:
            what = f"something accepted the connection but gave no Dask answer within {timeout:g} s"
        raise PluginError(f"executor dask: no Dask scheduler at {address}: {what}; {TO_DO}.") from None
    except (OSError, CommClosedError) as exc:
        if stage[0] == "connect":
            raise PluginError(
                f"executor dask: no Dask scheduler at {address}: nothing accepts connections there "
                f"({describe(exc)}); {TO_DO}."
            ) from None
        raise PluginError(
            f"executor dask: no Dask scheduler at {address}: the peer accepted the connection, then "
            f"closed it without speaking Dask's protocol; {TO_DO}."
        ) from None
    except Exception as exc:  # MemoryError, ValueError, msgpack errors, ...: bytes that are not Dask messages
        raise PluginError(
            f"executor dask: no Dask scheduler at {address}: the peer answered with bytes that are not "
            f"Dask's protocol ({describe(exc)}); {TO_DO}."
        ) from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if not isinstance(kind, str):
        raise PluginError(
            f"executor dask: no Dask scheduler at {address}: the peer speaks Dask's protocol but did not "
            f"say what it is; {TO_DO}."
        )
    return kind


async def _identity(address: str, endpoint: tuple[str, int] | None, timeout: float, stage: list[str]) -> Any:
    """Connect (TCP and handshake), ask `identity`, and always abort the connection afterwards."""
    from distributed.comm import connect
    from distributed.security import Security

    step = max(timeout / 2, 0.1)
    if endpoint is not None:
        # the TCP connect alone first, so that a peer that accepts and says nothing is told from one that refuses
        _, writer = await asyncio.wait_for(asyncio.open_connection(*endpoint), step)
        writer.close()
    stage[0] = "handshake"
    # the TLS settings of dask's configuration, as Client uses them (none by default)
    comm = await connect(address, timeout=step, **Security().get_connection_args("client"))
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def call_with_deadline(func: Callable[[], T], seconds: float) -> T:
    """func() in a daemon thread; its result or exception, or TimeoutError after seconds (the thread is
    then left to finish on its own: it holds nothing the caller needs)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = func()
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="vpeval-dask-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no result within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def describe(exc: BaseException) -> str:
    """An exception as a short clause: its type and first line."""
    if isinstance(exc, MemoryError):  # distributed read garbage as a frame length ("Unable to allocate 3.07 EiB")
        return "its first bytes, read as a message length, ask for more memory than any machine has"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

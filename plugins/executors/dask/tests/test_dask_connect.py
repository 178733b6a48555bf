"""Connecting to an address where no Dask scheduler is: whatever answers there (nothing, a silent
server, garbage bytes, a server that hangs up, a Dask worker), the first `map` gives one PluginError
sentence naming the address and what to do, within a bound of about 2 x connect_timeout."""

import socket
import threading
import time

import pytest

from vpeval.api import PluginContext
from vpeval.errors import PluginError, UserError
from vpeval_dask.executor import DaskExecutor

TIMEOUT = 1.0
BOUND = 2 * TIMEOUT + 4.0  # the design bound (probe + client) plus slack for a loaded 2-core machine


class FakeServer:
    """A TCP server on 127.0.0.1 (port 0) that answers every connection with `reply` bytes (None: says
    nothing and holds the connection; b"": hangs up at once). Its accept loop ends when it is closed."""

    def __init__(self, reply: bytes | None):
        self.reply = reply
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.reply is None:
                self.held.append(conn)
                continue
            try:
                conn.sendall(self.reply)
            except OSError:
                pass
            if self.reply == b"":
                conn.close()
            else:
                self.held.append(conn)

    def close(self):
        self.stopped.set()
        self.thread.join(5)
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def server():
    made = []

    def make(reply):
        made.append(FakeServer(reply))
        return made[-1]

    yield make
    for s in made:
        s.close()


def connect_error(address: str) -> tuple[str, float]:
    """The sentence the first map gives at address, and how long it took (the test's own thread keeps a
    hang from hanging the test)."""
    dask = DaskExecutor(DaskExecutor.Params(address=address, connect_timeout=TIMEOUT), PluginContext())
    raised: list[BaseException] = []

    def first_map():
        try:
            list(dask.map(abs, [1]))
        except BaseException as exc:  # noqa: BLE001 -- checked below
            raised.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=first_map, daemon=True)
    thread.start()
    thread.join(BOUND)
    elapsed = time.monotonic() - start
    assert not thread.is_alive(), f"connecting to {address} still runs after {BOUND:g} s"
    dask.close()
    assert raised and isinstance(raised[0], PluginError), f"not one PluginError sentence: {raised!r}"
    assert isinstance(raised[0], UserError)
    message = str(raised[0])
    assert "\n" not in message and message.endswith("."), message
    assert f"no Dask scheduler at {address}" in message, message
    return message, elapsed


def test_a_server_that_accepts_and_says_nothing_is_one_sentence_within_the_timeout(server):
    message, _ = connect_error(server(None).address)
    assert "accepted the connection but gave no Dask answer within 1 s" in message
    assert "correct `executor.params.address`" in message


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff" * 64,  # read as a frame length of 2**64 - 1 bytes: distributed would try to allocate it
        b"\x00\x00\x00\x00\x00\x00\x00\x7f" + b"\x00" * 56,  # ~9e18 bytes
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",  # a web server on the port
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"\x01\x02\x03",  # a plausible length, then too few bytes
        bytes(range(256)) * 4,
    ],
)
def test_garbage_bytes_are_one_sentence_not_a_memory_error_or_a_hang(server, garbage):
    message, _ = connect_error(server(garbage).address)
    assert any(what in message for what in ("not Dask's protocol", "gave no Dask answer", "closed it")), message
    assert "MemoryError" not in message and "EiB" not in message, message  # issue 38: numpy's words leaked through


def test_a_server_that_hangs_up_at_once_is_one_sentence(server):
    message, _ = connect_error(server(b"").address)
    assert "closed it without speaking Dask's protocol" in message or "gave no Dask answer" in message, message


def test_a_port_where_nothing_listens_is_one_sentence():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    probe.close()  # nothing listens there now: connection refused
    message, _ = connect_error(address)
    assert "nothing accepts connections there" in message


def test_a_dask_worker_address_is_named_as_not_a_scheduler(cluster):
    worker = next(iter(cluster.scheduler_info["workers"]))
    message, _ = connect_error(worker)
    assert "a Dask Worker answers there, not a scheduler" in message


def test_an_address_without_a_port_is_one_sentence():
    dask = DaskExecutor(DaskExecutor.Params(address="tcp://127.0.0.1", connect_timeout=TIMEOUT), PluginContext())
    with pytest.raises(PluginError, match=r"cannot be used .*write it as tcp://HOST:PORT"):
        list(dask.map(abs, [1]))


def test_the_real_scheduler_still_connects(cluster):
    dask = DaskExecutor(DaskExecutor.Params(address=cluster.scheduler_address, connect_timeout=10), PluginContext())
    try:
        assert sorted(dask.map(abs, [-1, 2, -3])) == [1, 2, 3]
    finally:
        dask.close()

"""The admin port against a web page and a network neighbour (broker/admin_guard.py, docs/security.md "The admin HTTP
port"), each attack as an attacker would run it:

- cross-site request forgery in the real headless Chromium of tests/integration/test_console_browser.py: a page on
  another origin (`http://localhost:P`) auto-submits a form POST, and calls a `no-cors` fetch POST, to
  `http://127.0.0.1:ADMIN/admin/erase?...`; no tombstone may be written, while a POST without browser headers (curl,
  urllib, the `minikafka` tools) still erases;
- DNS rebinding: a request whose Host is a foreign name is refused, on every path; loopback names, IP literals and
  the names in `minikafka.metrics.allowed.hosts` are answered;
- a broker whose admin port listens beyond loopback without credentials answers `/admin/*` and the console only on
  loopback (`/metrics` to everyone).
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka
from tests.integration.test_console_browser import browser, secured, statuses

pytestmark = pytest.mark.timeout(240)
__all__ = ["browser", "secured"]  # module-scoped fixtures: the headless Chromium, a broker with SASL and ACLs


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    config = {"log.cleaner.backoff.ms": 200, "minikafka.metrics.allowed.hosts": "kafka-admin.internal:1234"}
    with MiniKafka(config) as broker:
        yield broker


class AttackerSite:
    """A web server on `http://localhost:PORT` (another origin than the broker's 127.0.0.1) serving fixed pages."""

    def __init__(self) -> None:
        self.pages: dict[str, bytes] = {}
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path, b"not found")
                self.send_response(200 if self.path in pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://localhost:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def attacker() -> Iterator[AttackerSite]:
    site = AttackerSite()
    yield site
    site.close()


def users_topic(kafka: MiniKafka, client: dict[str, str] | None = None) -> str:
    """A compacted topic with one partition holding alice's and bob's records (end offset 2); `client` is the
    clients' config (default: the PLAINTEXT listener)."""
    client = client or {"bootstrap.servers": kafka.bootstrap_servers}
    topic = f"users-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(client)
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact",
                                                      "min.compaction.lag.ms": "0"})])[topic].result(30)
    producer = Producer({**client, "linger.ms": 0})
    producer.produce(topic, key=b"alice", value=b"alice@example.com", partition=0)
    producer.produce(topic, key=b"bob", value=b"bob@example.com", partition=0)
    assert producer.flush(30) == 0
    return topic


def end_offset(kafka: MiniKafka, topic: str, client: dict[str, str] | None = None) -> int:
    from confluent_kafka import TopicPartition

    consumer = Consumer({**(client or {"bootstrap.servers": kafka.bootstrap_servers}), "group.id": "watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def test_a_forged_form_post_from_another_origin_erases_nothing(kafka: MiniKafka, browser: Any,
                                                              attacker: AttackerSite) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    topic = users_topic(kafka)
    target = f"{kafka.admin_url}/admin/erase?topic={topic}&key=alice&timeout_ms=5000"
    attacker.pages["/form.html"] = (f'<html><body><form id="f" method="POST" action="{target}"></form>'
                                    '<script>document.getElementById("f").submit();</script></body></html>').encode()
    statuses(browser)
    browser.get(attacker.origin + "/form.html")
    WebDriverWait(browser, 30).until(lambda driver: driver.current_url.startswith(kafka.admin_url))
    assert statuses(browser).get(target) == 403
    assert "cross-site request refused" in browser.page_source
    assert end_offset(kafka, topic) == 2  # no tombstone


def test_a_forged_form_post_erases_nothing_even_when_the_browser_holds_the_consoles_credentials(
        secured: MiniKafka, browser: Any, attacker: AttackerSite) -> None:
    """With security on, a browser that opened the console resends its cached Basic credentials with the forged
    POST: the cross-site check refuses it before they are looked at."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    client = {"bootstrap.servers": secured.bootstrap_servers_for("SASL_PLAINTEXT"),
              "security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin",
              "sasl.password": "admin-secret"}
    topic = users_topic(secured, client)
    host = secured.admin_url.removeprefix("http://")
    browser.get(f"http://admin:admin-secret@{host}/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Topics"  # logged in: the browser caches the credentials
    target = f"{secured.admin_url}/admin/erase?topic={topic}&key=alice&timeout_ms=5000"
    attacker.pages["/secured-form.html"] = (
        f'<html><body><form id="f" method="POST" action="{target}"></form>'
        '<script>document.getElementById("f").submit();</script></body></html>').encode()
    statuses(browser)
    browser.get(attacker.origin + "/secured-form.html")
    WebDriverWait(browser, 30).until(lambda driver: driver.current_url.startswith(secured.admin_url))
    assert statuses(browser).get(target) == 403
    assert end_offset(secured, topic, client) == 2


def test_a_no_cors_fetch_from_another_origin_erases_nothing(kafka: MiniKafka, browser: Any,
                                                           attacker: AttackerSite) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    topic = users_topic(kafka)
    target = f"{kafka.admin_url}/admin/erase?topic={topic}&key=bob&timeout_ms=5000"
    attacker.pages["/fetch.html"] = (
        "<html><body><script>"
        f'fetch("{target}", {{mode: "no-cors", method: "POST", credentials: "include"}})'
        '.then(() => { document.title = "sent"; }, () => { document.title = "failed"; });'
        "</script></body></html>").encode()
    statuses(browser)
    browser.get(attacker.origin + "/fetch.html")
    WebDriverWait(browser, 30).until(lambda driver: driver.title in ("sent", "failed"))
    assert statuses(browser).get(target) == 403
    assert end_offset(kafka, topic) == 2

    # Not a browser (no Origin, no Sec-Fetch-Site): curl, urllib and `minikafka erase` still erase.
    request = urllib.request.Request(target, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read())["tombstone_offset"] == 2
    assert end_offset(kafka, topic) == 3


def test_the_console_s_own_origin_may_post(kafka: MiniKafka) -> None:
    """A POST whose Origin is the admin port itself, or from a typed-in address (Sec-Fetch-Site: none), passes."""
    topic = users_topic(kafka)
    url = f"{kafka.admin_url}/admin/compact?topic={topic}"
    for headers in ({"Origin": kafka.admin_url, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
                    {"Referer": kafka.admin_url + "/topic?name=" + topic}):
        with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST", headers=headers),
                                    timeout=30) as response:
            assert response.status in (200, 202)
    for headers in ({"Origin": "null"}, {"Origin": "http://localhost:1"}, {"Sec-Fetch-Site": "same-site"},
                    {"Referer": "http://evil.example/page"}):
        assert http_status(url, "POST", headers) == 403, headers


def http_status(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, data=b"" if method == "POST" else None, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_foreign_host_header_is_refused(kafka: MiniKafka) -> None:
    """DNS rebinding: the attacker's name re-pointed at 127.0.0.1 reaches the port, with its own Host."""
    topic = users_topic(kafka)
    port = kafka.metrics_port
    for path in ["/", f"/key?topic={topic}&key=alice&show=0", f"/topic?name={topic}", "/metrics", "/cluster/live",
                 f"/admin/cleaner-state?topic={topic}"]:
        url = kafka.admin_url + path
        assert http_status(url, headers={"Host": f"rebind.attacker.example:{port}"}) == 403, path
        assert http_status(url, headers={"Host": "kafka-admin.internal.attacker.example"}) == 403, path
        for host in [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"10.1.2.3:{port}",
                     f"kafka-admin.internal:{port}", "KAFKA-ADMIN.internal"]:
            assert http_status(url, headers={"Host": host}) == 200, (path, host)


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (the one a route to the outside would use), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_beyond_loopback_without_credentials_only_metrics_answers_other_hosts() -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    with MiniKafka({"minikafka.metrics.host": "0.0.0.0"}) as broker:
        remote = f"http://{address}:{broker.metrics_port}"
        assert http_status(remote + "/metrics") == 200
        for path in ["/", "/admin/cleaner-state?topic=x"]:
            assert http_status(remote + path) == 403, path
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(remote + "/", timeout=30)
        assert b"KAFKA_SUPER_USERS" in refused.value.read()
        assert http_status(broker.admin_url + "/") == 200  # loopback peers keep the console
        assert "answer loopback peers only" in broker.log_path.read_text()

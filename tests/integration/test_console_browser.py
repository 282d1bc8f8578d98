"""The console (broker/console/) in a real headless browser: Debian's `chromium` driven by selenium through the
system `chromedriver` (no browser download; `.ci/run` installs both the way it installs kcat).

One broker whose cleaner only runs when asked (a long backoff; `POST /admin/compact` starts a round), segments of
about 1.5 KiB so a topic has several, and `.deleted` segments unlinked at once. The front page lists the compacted
topic; its page shows the partition's end offset and checkpoint and draws its segments; the drawing changes, without
a reload, after a cleaning round; the key lookup finds the key's offsets before and after compaction and shows a value
only on a click; a share group is listed with its member and its records in flight and archived. A second broker
with security configured refuses the console without credentials. Three brokers in one process (`brokers=3`): the
cluster page shows each partition's leader and ISR, and follows stop_broker and start_broker without a reload.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka
from tests.integration.test_admin_http_auth import ScramBootstrappedKafka

pytestmark = pytest.mark.timeout(240)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
KEYS = 10
RECORDS = 200


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; "
                    ".ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # to read response statuses
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def kafka() -> Iterator[MiniKafka]:
    config = {"log.cleaner.backoff.ms": 600_000, "minikafka.log.roll.check.interval.ms": 200,
              "log.segment.delete.delay.ms": 0}
    with MiniKafka(config) as broker:
        yield broker


def compacted_topic(kafka: MiniKafka) -> str:
    topic = f"customers-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    config = {"cleanup.policy": "compact", "segment.bytes": "1500", "min.compaction.lag.ms": "0"}
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0, "batch.num.messages": 5})
    for i in range(RECORDS):
        producer.produce(topic, key=f"user-{i % KEYS}".encode(), value=f"address-{i}".encode())
        producer.poll(0)
    assert producer.flush(30) == 0
    return topic


# The page's script replaces the live part every second, so it is read in one script call (no stale elements).
def segments(driver: Any) -> list[tuple[str, int, int]]:
    """(kind, base offset, size in bytes) of each segment the page draws."""
    drawn = driver.execute_script(
        "return Array.from(document.querySelectorAll('svg.segments g.segment'))"
        ".map(g => [g.dataset.kind, Number(g.dataset.baseOffset), Number(g.dataset.sizeBytes)]);")
    return [(kind, base, size) for kind, base, size in drawn]


def cell(driver: Any, css_class: str) -> str:
    text: str = driver.execute_script(f"return document.querySelector('#partitions td.{css_class}').textContent;")
    return text


def look_up(driver: Any, key: str) -> list[int]:
    """Submit the topic page's key lookup form; the offsets the key page lists."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    field = driver.find_element(By.ID, "key-input")
    field.clear()
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "#key-lookup button").click()
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.ID, "key-records"))
    return [int(row.get_attribute("data-offset"))
            for row in driver.find_elements(By.CSS_SELECTOR, "#key-records tr[data-offset]")]


def test_the_console_shows_a_compacted_topic_and_follows_a_cleaning_round(kafka: MiniKafka, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    topic = compacted_topic(kafka)
    group = f"billing-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 150)], asynchronous=False)
    consumer.close()
    browser.get(kafka.admin_url + "/")
    row = browser.find_element(By.CSS_SELECTOR, f'#topics tr[data-topic="{topic}"]')
    assert "compact" in row.text and "cleaning due: 100% dirty" in row.text
    group_row = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{group}"]')
    assert f"{topic}-0: 50" in group_row.text and "classic" in group_row.text  # 200 - 150 behind
    row.find_element(By.LINK_TEXT, topic).click()

    assert cell(browser, "end-offset") == f"{RECORDS}"
    assert cell(browser, "checkpoint") == "\u2013"  # none yet
    before = segments(browser)
    assert len(before) >= 4 and {kind for kind, _, _ in before} == {"dirty", "active"}, before

    user_3 = [i for i in range(RECORDS) if i % KEYS == 3]
    assert look_up(browser, "user-3") == user_3
    assert "address-" not in browser.page_source  # values stay hidden
    assert browser.find_element(By.ID, "key-partition").text == "0"
    browser.back()
    WebDriverWait(browser, 10).until(lambda driver: driver.find_elements(By.ID, "key-input"))

    request = urllib.request.Request(f"{kafka.admin_url}/admin/compact?topic={topic}&wait=true&timeout_ms=30000",
                                     data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read())["results"][0]["status"] == "cleaned"
    # The page's script redraws from the server every second: no reload.
    WebDriverWait(browser, 15).until(lambda driver: segments(driver) != before and
                                     any(kind == "clean" for kind, _, _ in segments(driver)))
    after = segments(browser)
    # The round rolled the active segment and cleaned every closed one down to one record per key.
    assert [kind for kind, _, _ in after] == ["clean"] * (len(after) - 1) + ["active"], after
    assert after[-1][1] == RECORDS and sum(size for _, _, size in after) < sum(size for _, _, size in before) / 2
    checkpoint = cell(browser, "checkpoint")
    assert checkpoint.replace(",", "").isdigit() and int(checkpoint.replace(",", "")) >= RECORDS
    assert cell(browser, "end-offset") == f"{RECORDS}"

    assert look_up(browser, "user-3") == [user_3[-1]]  # only the latest record of the key is left on disk
    browser.find_element(By.CSS_SELECTOR, f'tr[data-offset="{user_3[-1]}"] a.reveal').click()
    WebDriverWait(browser, 10).until(lambda driver: driver.find_elements(By.ID, "value"))
    assert browser.find_element(By.ID, "value").text == f"address-{user_3[-1]}"

    browser.get(f"{kafka.admin_url}/key?topic={topic}&key_hex={b'user-3'.hex()}")
    assert [int(r.get_attribute("data-offset")) for r in
            browser.find_elements(By.CSS_SELECTOR, "#key-records tr[data-offset]")] == [user_3[-1]]


def test_the_front_page_lists_share_groups_with_members_and_records(kafka: MiniKafka, browser: Any) -> None:
    """A share group (KIP-932) with one ShareConsumer that accepted offset 0, holds offset 1 unacknowledged and
    rejected offset 2: the front page lists it Stable with its member, the share-partition start offset 1, one record
    in flight and one archived (the minikafka_share_group_records gauge's counts)."""
    from confluent_kafka import AcknowledgeType, ShareConsumer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    from selenium.webdriver.common.by import By

    topic, group = f"jobs-{uuid.uuid4().hex[:6]}", f"workers-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    earliest = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                  incremental_configs=[earliest])]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
    for value in (b"accepted", b"held", b"rejected"):
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0
    worker = ShareConsumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                            "client.id": "worker-1", "share.acknowledgement.mode": "explicit"})
    worker.subscribe([topic])
    try:
        received = []
        for _ in range(40):
            received += [m for m in worker.poll(0.5) if m.error() is None]
            if len(received) == 3:
                break
        assert [m.value() for m in received] == [b"accepted", b"held", b"rejected"]
        worker.acknowledge(received[0], AcknowledgeType.ACCEPT)
        worker.acknowledge(received[2], AcknowledgeType.REJECT)
        worker.commit_sync()
        browser.get(kafka.admin_url + "/")
        row = browser.find_element(By.CSS_SELECTOR, f'#share-groups tr[data-share-group="{group}"]')
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells[:3] == [group, "Stable", "1"] and cells[3].startswith("worker-1@"), cells
        assert cells[4:] == ["1", "1", f"{topic}-0: start 1, 1 in flight, 1 archived"], cells
    finally:
        worker.close()


@pytest.fixture(scope="module")
def three() -> Iterator[MiniKafka]:
    with MiniKafka(brokers=3) as kafka:
        yield kafka


def cluster(driver: Any) -> tuple[dict[int, str], dict[int, tuple[int, int, list[int]]]]:
    """What the cluster page shows now: broker id -> its state; partition -> (leader, leader epoch, ISR)."""
    brokers, partitions = driver.execute_script(
        "return [Array.from(document.querySelectorAll('#brokers tr[data-broker]'))"
        "  .map(r => [Number(r.dataset.broker), r.querySelector('td.state').textContent]),"
        " Array.from(document.querySelectorAll('#replicas tr[data-partition]'))"
        "  .map(r => [Number(r.dataset.partition), r.querySelector('td.leader').textContent,"
        "             r.querySelector('td.epoch').textContent, r.querySelector('td.isr').textContent])];")
    return ({broker: state for broker, state in brokers},
            {partition: (int(leader) if leader != "none" else -1, int(epoch), [int(i) for i in isr.split(", ")])
             for partition, leader, epoch, isr in partitions})


def test_the_cluster_page_follows_a_stopped_broker_without_a_reload(three: MiniKafka, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    topic = f"payments-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": three.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    browser.get(three.admin_url + "/")
    browser.find_element(By.LINK_TEXT, "brokers & leaders").click()
    WebDriverWait(browser, 10).until(lambda driver: driver.find_elements(By.ID, "replicas"))
    brokers, partitions = cluster(browser)
    assert brokers == {1: "running", 2: "running", 3: "running"}
    assert sorted(partitions) == [0, 1, 2]
    assert sorted(leader for leader, _, _ in partitions.values()) == [1, 2, 3]  # the placer spreads the leaders
    assert all(epoch == 0 and sorted(isr) == [1, 2, 3] for _, epoch, isr in partitions.values()), partitions

    stopped = partitions[0][0]
    three.faults.stop_broker(stopped)
    try:
        # The page's script fetches /cluster/live every second: no reload.
        WebDriverWait(browser, 15).until(lambda driver: cluster(driver)[0][stopped] == "stopped")
        brokers, after = cluster(browser)
        assert [state for broker, state in brokers.items() if broker != stopped] == ["running", "running"]
        leader, epoch, isr = after[0]
        assert leader not in (stopped, -1) and epoch == 1, after  # the leader moved, a new epoch
        for partition, (leader, _, isr) in after.items():
            assert stopped not in isr and len(isr) == 2 and leader in isr, (partition, after)  # the ISR shrank
        assert "stopped" in browser.find_element(By.CSS_SELECTOR, f'#brokers tr[data-broker="{stopped}"]').text
    finally:
        three.faults.start_broker(stopped)
    WebDriverWait(browser, 15).until(lambda driver: cluster(driver)[0][stopped] == "running" and
                                     all(sorted(isr) == [1, 2, 3] for _, _, isr in cluster(driver)[1].values()))


@pytest.fixture(scope="module")
def secured() -> Iterator[MiniKafka]:
    config = {"sasl.enabled.mechanisms": "SCRAM-SHA-256", "super.users": "User:admin",
              "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with ScramBootstrappedKafka(config, {"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
                                ["SCRAM-SHA-256=[name=admin,password=admin-secret]"]) as broker:
        yield broker


def statuses(driver: Any) -> dict[str, int]:
    """URL -> HTTP status of the documents the browser received since the last call (DevTools network log)."""
    found = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.responseReceived":
            response = message["params"]["response"]
            found[response["url"]] = response["status"]
    return found


def test_with_security_the_console_needs_the_admin_credentials(secured: MiniKafka, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    statuses(browser)
    for path in ["/", "/topic?name=x", "/key?topic=x&key=k", "/static/console.js"]:
        browser.get(secured.admin_url + path)
        assert "Topics" not in browser.page_source  # the browser asks for credentials; the page is not shown
        assert statuses(browser).get(secured.admin_url + path) == 401
    host = secured.admin_url.removeprefix("http://")
    browser.get(f"http://admin:wrong-password@{host}/")
    assert statuses(browser).get(f"http://admin:wrong-password@{host}/") == 401
    browser.get(f"http://admin:admin-secret@{host}/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Topics"
    assert 200 in statuses(browser).values()

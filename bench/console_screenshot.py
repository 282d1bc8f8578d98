"""Take the README's screenshot of the console's topic page (docs/console-topic.png) with headless chromium.

    .venv/bin/python -m bench.console_screenshot [--out docs/console-topic.png]

A broker with a compacted topic of three partitions: records with tombstones, one cleaning round, then more records,
so the drawing shows a clean part, a dirty part and the active segment. Needs Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import MiniKafka

TOPIC = "customers"


def produce(kafka: MiniKafka, start: int, count: int, keys: int) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0, "batch.num.messages": 10,
                         "partitioner": "murmur2_random"})
    for i in range(start, start + count):
        key = f"customer-{i % keys:03d}".encode()
        value = None if i % 97 == 0 else json.dumps({"id": i % keys, "address": f"{i} Main Street"}).encode()
        producer.produce(TOPIC, key=key, value=value)
        producer.poll(0)
    assert producer.flush(30) == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/console-topic.png")
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    config = {"log.cleaner.backoff.ms": 600_000, "log.segment.delete.delay.ms": 0}
    with MiniKafka(config) as kafka:
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        topic_config = {"cleanup.policy": "compact", "segment.bytes": "6000", "max.compaction.lag.ms": "3600000",
                        "min.cleanable.dirty.ratio": "0.5"}
        admin.create_topics([NewTopic(TOPIC, 3, 1, config=topic_config)])[TOPIC].result(30)
        produce(kafka, 0, 900, 60)
        compact = urllib.request.Request(f"{kafka.admin_url}/admin/compact?topic={TOPIC}&wait=true", data=b"",
                                         method="POST")
        urllib.request.urlopen(compact, timeout=60).read()
        time.sleep(1.5)  # the last round a little in the past
        produce(kafka, 900, 400, 60)
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "billing",
                             "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(TOPIC, p, 200) for p in range(3)], asynchronous=False)
        consumer.close()

        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1180,880",
                         "--hide-scrollbars"):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)
        try:
            driver.get(f"{kafka.admin_url}/topic?name={TOPIC}")
            time.sleep(1.5)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(args.out)
        finally:
            driver.quit()
    print(f"wrote {args.out} ({Path(args.out).stat().st_size} bytes)")


if __name__ == "__main__":
    main()

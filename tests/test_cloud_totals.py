"""Money over a fleet in two currencies (issue 32, item 4): the Cloud tab and `cloud idle` give one
total per currency — never CNY added to USD as if one — or, with the user's [cost] fx rate, one
figure in [cost] currency that names the rate it used."""

from __future__ import annotations

from tui.cloud.fleet import InstanceView, Snapshot
from tui.cloud.model import Instance
from tui.cloud.pricing import InstancePrice
from tui.cloud.totals import per_currency, total_text
from tui.cloud.utilization import Utilization
from tui.widgets.cloud_view import Status, status_line

NOW = 1_800_000_000.0


def idle_view(iid: str, provider: str, per_hour: float, currency: str) -> InstanceView:
    util = Utilization(2.0, 2.0, 2.0, NOW - 3600, True)
    price = InstancePrice(per_hour, currency, "provider")
    v = InstanceView(Instance(iid, provider, "r", "t", "running"), price, util, "m", None, None)
    v.waste_per_hour = per_hour
    return v


def fleet() -> Snapshot:
    return Snapshot(NOW, [idle_view("i-aws", "aws", 3.0, "USD"), idle_view("i-ali", "aliyun", 20.0, "CNY")])


def test_the_cloud_tab_totals_each_currency_on_its_own() -> None:
    line = status_line(fleet(), Status(NOW, 60.0, False, None, frozenset())).plain
    assert "2 idle, wasting $3.00/h + CNY 20.00/h" in line  # it said "$23.00/h"


def test_with_a_rate_the_total_is_in_the_users_currency_and_says_the_rate() -> None:
    line = status_line(fleet(), Status(NOW, 60.0, False, None, frozenset(), "USD", {"CNY": 0.14})).plain
    assert "wasting $5.80/h (CNY at 0.14 USD, [cost] fx)" in line
    # in CNY, with a USD rate
    sums = per_currency([(3.0, "USD"), (20.0, "CNY"), (None, "USD")])
    assert sums == {"USD": 3.0, "CNY": 20.0}
    assert total_text(sums, {"USD": 7.0}, "CNY", "/h") == "CNY 41.00/h (USD at 7 CNY, [cost] fx)"
    # a rate for some currencies only: nothing converted, each on its own
    assert total_text({**sums, "EUR": 1.0}, {"CNY": 0.14}, "USD") == "$3.00 + CNY 20.00 + EUR 1.00"

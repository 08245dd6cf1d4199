"""Monthly sales report from the order log."""

import csv
import json


def load_orders(path):
    """Read one JSON order per line from the order log."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class ReportBuilder:
    """Aggregates orders into per-SKU revenue."""

    def __init__(self):
        self.revenue = {}

    def add(self, order):
        for line in order["lines"]:
            sku = line["sku"]
            self.revenue[sku] = self.revenue.get(sku, 0) + line["qty"] * line["unit_cost"]


@staticmethod
def render_csv(builder, out):
    """Write the revenue table as CSV, highest revenue first."""
    w = csv.writer(out)
    w.writerow(["sku", "revenue_cents"])
    for sku, cents in sorted(builder.revenue.items(), key=lambda kv: -kv[1]):
        w.writerow([sku, cents])

"""Test upstream "crm": customers and contacts, a ``search`` tool whose name collides with
the weather server's, and a high-risk refund tool (tagged ``risk:high``).

Run: ``python tests/gateway_servers/crm.py`` (stdio) or ``... --http --port N``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _serve import make_server, run, tool

CONTACTS: dict[int, dict] = {4411: {"id": 4411, "name": "Ada Lovelace", "email": "ada@example.com"}}

TOOLS = [
    tool("search", "Search customers in the CRM by name, company or email address.",
         {"query": {"type": "string", "description": "customer name, company or email"}}, ["query"]),
    tool("create_contact", "Create a new customer contact record in the CRM with a name and email address.",
         {"name": {"type": "string", "description": "full name of the contact"},
          "email": {"type": "string", "description": "email address of the contact"},
          "company": {"type": "string", "description": "company the contact works for"}},
         ["name", "email"]),
    tool("get_customer", "Look up one customer record by its numeric customer id.",
         {"customer_id": {"type": "integer", "description": "numeric customer id"}}, ["customer_id"]),
    tool("refund_payment", "Refund a payment to a customer: money goes back to their card.",
         {"customer_id": {"type": "integer", "description": "numeric customer id"},
          "amount": {"type": "number", "description": "amount to refund in euros"}},
         ["customer_id", "amount"],
         annotations={"destructiveHint": True},
         _meta={"toolsift/tags": ["risk:high", "payments"]}),
]


async def search(ctx, args):
    q = args["query"].lower()
    return {"customers": [c for c in CONTACTS.values() if q in c["name"].lower() or q in c["email"]]}


async def create_contact(ctx, args):
    cid = max(CONTACTS) + 1
    CONTACTS[cid] = {"id": cid, "name": args["name"], "email": args["email"]}
    return {"created": CONTACTS[cid]}


async def get_customer(ctx, args):
    return {"customer": CONTACTS.get(int(args["customer_id"]))}


async def refund_payment(ctx, args):
    return {"refunded": args["amount"], "customer_id": args["customer_id"]}


HANDLERS = {f.__name__: f for f in (search, create_contact, get_customer, refund_payment)}

if __name__ == "__main__":
    run(make_server("crm", lambda: TOOLS, HANDLERS))

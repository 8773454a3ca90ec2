#!/usr/bin/env python3
"""A personal-token script: print a room's recent history, then send approved text.

Uses the client generated from the served document (docs/api.md, "Generating a client"):

  openapi-python-client generate --url http://127.0.0.1:8080/openapi.yaml \
      --meta none --output-path switchboard_client
  SWITCHBOARD_URL=http://127.0.0.1:8080 SWITCHBOARD_TOKEN=csk_... \
      python3 read_and_send.py '!room:example.org' 'On my way.'

tests/integration/server/clients.rs runs this file against the real server.
"""
import os
import sys
import uuid

from switchboard_client import AuthenticatedClient
from switchboard_client.api.messages import messages_list, rooms_send_message
from switchboard_client.models import ReadableMessagePage, SendMessageRequest, SendMessageResult


def main(room_id, text):
    client = AuthenticatedClient(
        base_url=os.environ["SWITCHBOARD_URL"], token=os.environ["SWITCHBOARD_TOKEN"]
    )
    with client:
        page = messages_list.sync(client=client, room_id=room_id, limit=20)
        if not isinstance(page, ReadableMessagePage):
            sys.exit(f"reading history failed: {page}")
        for m in reversed(page.messages):  # newest first on the wire
            print(f"{m.timestamp} {m.direction.value:8} {m.sender_id}: {m.text}")

        # The txnId makes a retry of this very send harmless: it is sent once.
        request = SendMessageRequest(content=text, txn_id=str(uuid.uuid4()))
        sent = rooms_send_message.sync(room_id, client=client, body=request)
        if not isinstance(sent, SendMessageResult):
            sys.exit(f"sending failed: {sent}")
        print(f"sent {sent.event_id}")


if __name__ == "__main__":
    main(*sys.argv[1:3])

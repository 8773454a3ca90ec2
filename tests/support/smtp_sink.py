#!/usr/bin/env python3
"""A real SMTP server for the integration tests (aiosmtpd).

usage: smtp_sink.py PORT MAILDIR

Accepts every message on 127.0.0.1:PORT and writes each one, as received, to
MAILDIR/<n>.eml. Prints "ready" once listening. Exits when its stdin closes, so it
never outlives the test process that started it.
"""
import itertools
import os
import sys

from aiosmtpd.controller import Controller

counter = itertools.count()


class Sink:
    def __init__(self, maildir):
        self.maildir = maildir

    async def handle_DATA(self, server, session, envelope):
        n = next(counter)
        tmp = os.path.join(self.maildir, ".%d.tmp" % n)
        with open(tmp, "wb") as f:
            f.write(b"X-Rcpt-To: " + ",".join(envelope.rcpt_tos).encode() + b"\r\n")
            f.write(envelope.original_content or envelope.content)
        os.rename(tmp, os.path.join(self.maildir, "%d.eml" % n))
        return "250 Message accepted for delivery"


def main():
    port, maildir = int(sys.argv[1]), sys.argv[2]
    os.makedirs(maildir, exist_ok=True)
    controller = Controller(Sink(maildir), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    try:
        sys.stdin.read()  # returns at EOF: the parent is gone
    finally:
        controller.stop()


if __name__ == "__main__":
    main()

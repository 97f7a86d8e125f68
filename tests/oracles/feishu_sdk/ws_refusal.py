"""The official Python SDK's long-connection client against the local
Feishu server: `python3 ws_refusal.py BASE_URL APP_ID APP_SECRET`.

Prints one JSON line when the client gives up for good, naming the
exception class (ClientException: final; the SDK does not retry it). A
refusal the SDK retries keeps it running: the test counts its endpoint
calls and kills it.
"""

import json
import sys

import lark_oapi as lark
from lark_oapi.ws.client import Client


def main():
    base, app_id, secret = sys.argv[1:4]
    handler = lark.EventDispatcherHandler.builder("", "").build()
    client = Client(app_id, secret, event_handler=handler, domain=base,
                    log_level=lark.LogLevel.ERROR)
    try:
        client.start()
    except Exception as e:  # the SDK's final refusal
        print(json.dumps({"kind": "gave_up", "class": type(e).__name__, "error": str(e)}),
              flush=True)
        sys.exit(3)


main()

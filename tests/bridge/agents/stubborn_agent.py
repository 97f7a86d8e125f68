#!/usr/bin/env python3
"""A fault-injecting agent for the delivery-receipt tests: it draws Claude
Code's input box (rule, `❯ ` + text, rule, shortcut hint) and ignores the
first N presses of Enter (argv[1]; `never`: every one; `late:S`: takes
the first but redraws only S seconds later, the line still in the box
until then, and ignores Enter meanwhile). A taken line is echoed as
`❯ text` and answered with `● You said: text`."""

import codecs
import os
import select
import sys
import time
import tty

IGNORE = sys.argv[1] if len(sys.argv) > 1 else "1"
LATE = float(IGNORE[5:]) if IGNORE.startswith("late:") else None
RULE = "─" * 60
HISTORY_ROWS = 20


def main():
    fd = sys.stdin.fileno()
    tty.setraw(fd)  # no echo: the box is drawn here
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    history = ["● Ready."]
    buf = ""
    ignored = 0

    def draw():
        rows = history[-HISTORY_ROWS:]
        screen = "\r\n".join(rows) + f"\r\n\r\n{RULE}\r\n❯ {buf}\r\n{RULE}\r\n  ? for shortcuts"
        sys.stdout.write("\x1b[H\x1b[2J" + screen)
        sys.stdout.flush()

    draw()
    redraw_at = None
    while True:
        wait = None if redraw_at is None else max(0.0, redraw_at - time.monotonic())
        if not select.select([fd], [], [], wait)[0]:
            history.extend([f"❯ {buf}", f"● You said: {buf}"])
            buf, redraw_at = "", None
            draw()
            continue
        data = os.read(fd, 1024)
        if not data:
            return
        for ch in decoder.decode(data):
            if redraw_at is not None:
                continue
            if ch in "\r\n":
                if LATE is not None:
                    redraw_at = time.monotonic() + LATE
                    continue
                if IGNORE == "never" or ignored < int(IGNORE):
                    ignored += 1
                    continue
                history.extend([f"❯ {buf}", f"● You said: {buf}"])
                buf = ""
            elif ch == "\x03":
                return
            elif ch.isprintable():
                buf += ch
            draw()


if __name__ == "__main__":
    main()

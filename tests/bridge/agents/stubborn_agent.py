#!/usr/bin/env python3
"""A fault-injecting agent for the delivery-receipt tests: it draws Claude
Code's input box (rule, `❯ ` + text, rule, shortcut hint) and ignores the
first N presses of Enter (argv[1]; `never`: every one). A taken line is
echoed as `❯ text` and answered with `● You said: text`."""

import codecs
import os
import sys
import tty

IGNORE = sys.argv[1] if len(sys.argv) > 1 else "1"
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
    while True:
        data = os.read(fd, 1024)
        if not data:
            return
        for ch in decoder.decode(data):
            if ch in "\r\n":
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

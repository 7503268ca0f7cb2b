"""Small real programs the screen tests drive (one copy for every suite)."""

from __future__ import annotations

#: A curses menu like a project generator's: four items, the arrows move the
#: highlight (keypad on, so application cursor keys), Enter prints the pick.
MENU = r'''
import curses

ITEMS = ["react", "vue", "svelte", "vanilla"]


def main(scr):
    curses.curs_set(0)
    scr.keypad(True)
    sel = 0
    while True:
        scr.erase()
        scr.addstr(0, 0, "? Select a framework")
        for i, item in enumerate(ITEMS):
            scr.addstr(2 + i, 2, item, curses.A_REVERSE if i == sel else 0)
        scr.refresh()
        k = scr.getch()
        if k == curses.KEY_DOWN:
            sel = min(sel + 1, len(ITEMS) - 1)
        elif k == curses.KEY_UP:
            sel = max(sel - 1, 0)
        elif k in (10, 13, curses.KEY_ENTER):
            return ITEMS[sel]


print("picked", curses.wrapper(main))
'''

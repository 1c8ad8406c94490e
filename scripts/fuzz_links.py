"""Counts the described links the stateful phase followed, over the NDJSON
event logs of one or more schemathesis runs (each one's --report ndjson).

A link counts when a scenario applied it (its step was generated from the
linked answer), as schemathesis's own "API Links: N covered" counts within
one run. Prints the count.
"""

import json
import sys


def followed(path):
    """The ids of the links applied in the finished scenarios of one log."""
    links = set()
    with open(path, encoding="utf-8") as log:
        for line in log:
            scenario = json.loads(line).get("ScenarioFinished")
            if not scenario or scenario["is_final"] or scenario["status"] in ("interrupted", "skip"):
                continue
            for case in scenario["recorder"].get("cases", {}).values():
                transition = case.get("transition")
                if case.get("is_transition_applied") and transition:
                    links.add(transition["id"])
    return links


def main(paths):
    links = set()
    for path in paths:
        links |= followed(path)
    print(len(links))


if __name__ == "__main__":
    main(sys.argv[1:])

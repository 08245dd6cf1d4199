#!/usr/bin/env python3
"""Tools for the nightly job."""

import os
import sys

LIMIT = 10


# Fetch the remote manifest.
@retry(times=3)
def fetch(url):
    data = {
        "url": url,
    }
    return data


class Job:
    """One nightly job."""

    def run(self):
        return fetch(os.environ["URL"])


async def main():
    await Job().run()

if __name__ == "__main__":
    main()

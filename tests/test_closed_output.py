"""A reader that stops early (`semsearch query ... | head -1`): the command ends without a message, with the status
a tool ended by SIGPIPE has (141), not an error line on the terminal."""

import signal
import subprocess
import sys


def test_a_query_whose_reader_left_stops_quietly(sample_encoded):
    command = [
        sys.executable,
        "-m",
        "semsearch",
        "query",
        "search",
        "--index",
        str(sample_encoded),
        "-k",
        "20",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # gone before the first line is written (loading the model takes a second)
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE
    assert stderr == ""
    whole = subprocess.run(command, capture_output=True, text=True, timeout=120)  # read: answers as ever
    assert whole.returncode == 0 and len(whole.stdout.splitlines()) >= 20

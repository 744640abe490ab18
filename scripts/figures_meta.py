"""What every raw result under docs/figures/ records beside its measurement: the program's hash,
the machine, the date, the command and the machine's load (`uptime`), so a published figure can be
traced to the run that produced it. Imported by the scripts that write those raw results."""
import hashlib
import os
import platform
import subprocess
import sys
import time


def sha256_12(path):
    """The first 12 hex digits of the sha256 of the file at `path`."""
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def machine():
    """The CPU model, the number of cores and the architecture."""
    model = '?'
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return {'cpu': model, 'cores': os.cpu_count(), 'arch': platform.machine()}


def uptime():
    """`uptime`'s line (the load averages over 1, 5 and 15 minutes)."""
    try:
        return subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
    except OSError:
        return 'load average: %.2f, %.2f, %.2f' % os.getloadavg()


def meta(program, command=None):
    """The record's provenance: `program`'s hash, the machine, the UTC date, the command, the load."""
    return {
        'program': os.path.relpath(program),
        'program_sha256': sha256_12(program),
        'machine': machine(),
        'at': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'command': command if command is not None else ' '.join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
        'uptime': uptime(),
    }

"""Shapes of a run that the other generators (fuzz_cases.py, fuzz_files.py, fuzz_wide.py) do not give: a command
line reshaped (an option repeated with another value, `--flag=value`, the positional after the options or after
`--`, hundreds of systems, an option given thousands of times, an argument of a megabyte, unicode and undecodable
names), stdin as the file (`-`, /dev/stdin), the environment variables the command line reads (COLUMNS and LINES
on a terminal, HOME for `~`, TMPDIR), a terminal as stdout, odd paths as files (links that loop, dangle or point
at a folder, a chain of links, names with spaces, newlines, a leading dash, unicode or 250 characters) and a file
rewritten while the run reads it. `reshape` changes a Case in place; fuzz_campaign._child applies its stdin,
environment, terminal and rewrites."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

# every environment variable the command line reads, directly or through the library calls it makes (a test
# checks that each `os.environ`/`getenv` name in src/flopcast is here): the terminal's size (shutil.get_terminal_size
# on a terminal), `~` in a path (expanduser), the temporary folder of a sweep's variants (tempfile)
ENV = {"COLUMNS": ["0", "1", "2", "-5", "abc", "", "40", "80", "300", "99999999999", "1e30", "\u0663"],
       "LINES": ["0", "-1", "1", "x", "100000"],
       "HOME": ["", "/nonexistent", "/dev/null", "/", "relative/dir", "/tmp/\u00e9\u00e8", None],
       "TMPDIR": ["/nonexistent", "/dev/null", "/etc/passwd", "", "relative", None],
       "TERM": ["dumb", "", "xterm-256color", None], "NO_COLOR": ["1", ""], "PWD": ["/nonexistent", ""]}
UNICODE_NAMES = ["\uff4c\uff4c\uff41\uff4d\uff41\uff13-\uff18\uff42", "llama3\u20108b",
                 "\u043b\u043b\u0430\u043c\u04303-8b", "llama3-8b\u200b", "\u202ellama3-8b", "lla\u0301ma3-8b",
                 "\U0001f999-8b", "llama3-8b\udcff", "\udcff\udcfe.yaml", "llama3-8\u0392", "LLAMA3-8B",
                 "llama3\u00a08b", "\u0130llama", "m\u00f6del.yaml", "\u4e2d\u6587.yaml", "ll\tama", "llama3-8b\n",
                 " llama3-8b"]
ODD_NAMES = ["with space.yaml", "new\nline.yaml", "-dash.yaml", "--json.yaml", "\u00e9t\u00e9.yaml",
             "a" * 246 + ".yaml", ".yaml", "x.YAML", "x.yaml.", "x.yaml ", "x.Yml", "x.toml.yaml", "*.yaml",
             "$HOME.yaml", "`x`.yaml"]
CHURN = [b"", b"base: llama3-8b\n", b"base: trainium2\n", b"\xff\xfe\x00", b"layers: [", b"base: p5.48xlarge\n",
         b"arrival_s,input_tokens,output_tokens\n", b"a: &a [*a]\n", b"base: churn.yaml\n"]


def reshape(rng: random.Random, case, names, folder: Path, value_of) -> None:
    """Reshape the case's command line, stdin, environment or files (one to two of them); `value_of(flag)` draws
    a value for one of the command's options (None for a flag; with draw=False only "" or None, drawing nothing)."""
    for shape in rng.sample(SHAPES, rng.randint(1, 2)):
        shape(rng, case, names, folder, value_of)


def _valued(argv: list, value_of) -> list[int]:
    """Indices of the options in argv that take a value (the value is at index + 1)."""
    return [i for i, a in enumerate(argv[:-1]) if a.startswith("-") and value_of(a, draw=False) is not None]


def _repeat(rng, case, names, folder, value_of):
    """An option given again, with another value (click keeps the last), or a flag twice."""
    argv = case.argv
    options = _valued(argv, value_of)
    if options:
        i = rng.choice(options)
        extra = [argv[i], value_of(argv[i])]
        argv[rng.choice([i, len(argv)]):rng.choice([i, len(argv)])] = extra  # before or after the first
    elif len(argv) > 2:
        argv.append(rng.choice([a for a in argv[1:] if a.startswith("--")] or ["--json"]))


def _equals(rng, case, names, folder, value_of):
    """`--flag value` as `--flag=value` (or as `--flag= value`, an empty value and a stray argument)."""
    argv = case.argv
    options = [i for i in _valued(argv, value_of) if argv[i].startswith("--")]
    if options:
        i = rng.choice(options)
        sep = rng.choice(["=", "=", "= "])
        argv[i:i + 2] = [argv[i] + "=" + argv[i + 1]] if sep == "=" else [argv[i] + "=", argv[i + 1]]


def _order(rng, case, names, folder, value_of):
    """The positional after the options, after `--`, or twice; an unknown option or a short one upper-cased."""
    argv = case.argv
    if len(argv) < 2:
        return
    pick = rng.randrange(5)
    if pick == 0 and not argv[1].startswith("-"):
        argv.append(argv.pop(1))
    elif pick == 1 and not argv[1].startswith("-"):
        argv.extend(["--", argv.pop(1)])
    elif pick == 2:
        argv.append(argv[1])
    elif pick == 3:
        argv.insert(rng.randrange(1, len(argv) + 1), rng.choice(["--bogus", "-Z", "--JSON", "--tp2", "---json", "-",
                                                                 "--", "--no-json", "--help", "-h", "--version"]))
    else:
        argv.insert(0, rng.choice(["--version", "--help", "-h", "--bogus", "train", "--json"]))


def _long(rng, case, names, folder, value_of):
    """Very long argument lists and arguments: hundreds of systems, an option repeated thousands of times,
    thousands of positionals, an argument of a megabyte, a number of 100,000 digits."""
    argv = case.argv
    pick = rng.randrange(6)
    if pick == 0:
        systems = ",".join(rng.choices(names.systems, k=rng.choice([50, 300, 2000])))
        if "-H" in argv:
            argv[argv.index("-H") + 1] = systems
        else:
            argv += ["-H", systems]
    elif pick == 1:
        options = _valued(argv, value_of)
        if options:
            i = rng.choice(options)
            argv += [argv[i], argv[i + 1]] * rng.choice([100, 3000])
        else:
            argv += ["--json"] * rng.choice([100, 3000])
    elif pick == 2:
        argv += [argv[1] if len(argv) > 1 else "x"] * rng.choice([10, 5000])
    elif pick == 3:
        options = _valued(argv, value_of)
        big = rng.choice(["8" * 100_000, "a" * (1 << 20), "1" + "0" * 5000, "1." + "0" * 100_000 + "1",
                          "0." + "0" * 400 + "1", "8," * 50_000])
        if options:
            argv[rng.choice(options) + 1] = big
        else:
            argv.append(big)
    elif pick == 4:
        comma = [i + 1 for i in _valued(argv, value_of) if "," in argv[i + 1] or argv[i] in ("-H", "--hardware")]
        if comma:
            i = rng.choice(comma)
            argv[i] = ",".join([argv[i]] * rng.choice([100, 1000]))
    else:
        argv += [f"--x{i}" for i in range(rng.choice([10, 1000]))]


def _unicode(rng, case, names, folder, value_of):
    """A name or value with homoglyphs, zero-width and bidirectional marks, combining accents, emoji, undecodable
    bytes (as the surrogate escapes Python gives a command line that is not UTF-8)."""
    argv = case.argv
    options = _valued(argv, value_of)
    targets = ([1] if len(argv) > 1 and not argv[1].startswith("-") else []) + [i + 1 for i in options]
    if targets:
        i = rng.choice(targets)
        argv[i] = rng.choice(UNICODE_NAMES + [argv[i] + "\u200b", "\u0661" + argv[i], argv[i].upper(),
                                              argv[i].replace("-", "\u2212"), argv[i] + "\udcff"])


def _files(argv: list, folder: Path) -> list[int]:
    """Indices of arguments that are files the case wrote under its folder."""
    out = []
    for i, a in enumerate(argv):
        try:
            if a.startswith(str(folder)) and Path(a).is_file():
                out.append(i)
        except (OSError, ValueError):
            continue
    return out


def _stdin(rng, case, names, folder, value_of):
    """One of the case's files given as stdin, named `-`, /dev/stdin or /proc/self/fd/0."""
    files = _files(case.argv, folder)
    if files:
        i = rng.choice(files)
        case.stdin = Path(case.argv[i]).read_bytes()[: 4 << 20]
        case.argv[i] = rng.choice(["-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0", "-.yaml"])
    else:
        case.stdin = rng.choice([b"base: llama3-8b\n", b"", b"\xff" * 100, b"x" * (1 << 20)])
        if len(case.argv) > 1 and not case.argv[1].startswith("-"):
            case.argv[1] = "-"


def _odd_path(rng, case, names, folder, value_of):
    """One of the case's files under an odd name or behind links: a loop, a dangling link, a link to a folder, a
    chain of 60 links, a name with a space, a newline, a leading dash, unicode, 250 characters."""
    files = _files(case.argv, folder)
    if not files:
        return
    i = rng.choice(files)
    src = Path(case.argv[i])
    pick = rng.randrange(6)
    link = folder / f"link{rng.randrange(10**6)}{src.suffix}"
    if pick == 0:
        target = folder / rng.choice(ODD_NAMES)
        try:
            src.rename(target)
        except OSError:
            return  # a name this file system refuses (too long): the case stays as it was
        case.argv[i] = str(target)
        return
    if pick == 1:
        other = folder / f"loop{rng.randrange(10**6)}{src.suffix}"
        link.symlink_to(other)
        other.symlink_to(link)
    elif pick == 2:
        link.symlink_to(folder / "missing" / src.name)
    elif pick == 3:
        link.symlink_to(folder)
    elif pick == 4:
        prev = src
        for k in range(60):
            nxt = folder / f"chain{k}-{rng.randrange(10**6)}{src.suffix}"
            nxt.symlink_to(prev)
            prev = nxt
        link = prev
    else:
        os.link(src, link)
    case.argv[i] = str(link)


def _churn(rng, case, names, folder, value_of):
    """One of the case's files rewritten over and over while the run reads it (in place: a read may see half)."""
    files = _files(case.argv, folder)
    if files:
        path = case.argv[rng.choice(files)]
        case.churn = (path, [Path(path).read_bytes()] + rng.sample(CHURN, 3))


def _environment(rng, case, names, folder, value_of):
    """One to three of the variables the command line reads; stdout a terminal one time in two."""
    case.env = {k: rng.choice(v) for k, v in rng.sample(sorted(ENV.items()), rng.randint(1, 3))}
    case.tty = rng.random() < 0.5


SHAPES = [_repeat, _equals, _order, _long, _unicode, _stdin, _odd_path, _churn, _environment]


# ---- applied in the campaign's forked run (fuzz_campaign._child) ----

def terminal(folder: Path):
    """Make stdout a pseudo-terminal of a random size; a thread copies what it shows to folder/stdout."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    rows, cols = random.Random(folder.name).choice([(0, 0), (24, 1), (24, 20), (24, 80), (5, 300), (65535, 65535)])
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.dup2(slave, 1)
    os.close(slave)

    def copy():
        with open(folder / "stdout", "wb") as f:
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: no writer is left
                    return
                if not chunk:
                    return
                f.write(chunk)

    t = threading.Thread(target=copy, daemon=True)
    t.start()
    return t


def rewrite(path: str, versions: list) -> None:
    """Rewrite the file in place with each version in turn until the run ends (a reader may see half of one)."""
    for i in range(10**9):
        try:
            with open(path, "wb") as f:
                f.write(versions[i % len(versions)])
        except OSError:
            return
        time.sleep(0.002 + len(versions[i % len(versions)]) / 1e8)

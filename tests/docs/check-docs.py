#!/usr/bin/python3
"""The documentation against the program (TAP).

    check-docs.py commands TWB SOURCE_ROOT   every command in README.md and docs/*.md
    check-docs.py cli-md TWB SOURCE_ROOT     docs/cli.md's option tables against --help
    check-docs.py man TWB MANPAGE            twb(1): renders without warnings; its options
    check-docs.py links TWB SOURCE_ROOT      relative links and pictures point at what exists

commands: each line of a fenced `sh` block is split into simple commands
(|, &&, ;); a twb invocation must name a command and options that
`twb COMMAND --help` (the window: `twb --help-gui`) lists; scripts, tools
and benchmark programs it runs must exist.  Blocks fenced as `sh run` are
also run, in order, in a scratch folder holding assets/ (a link to the
source's), build/app/twb and twb on the PATH: each must exit 0.

cli-md and man: each command's section (docs/cli.md's `## twb NAME`, the
manual's `.SS "twb NAME …"`) names exactly the options its --help prints,
neither fewer nor more (-h/--help, which every command has, aside).
"""
import atexit
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

COMMANDS = ["train", "eval", "info", "compile", "predict", "devices", "profile",
            "trace-info", "onnx-info", "import", "export", "simulate"]
OPTION = re.compile(r"(?<![\w\\-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")
ALWAYS = {"-h", "--help"}
WRAPPERS = {"xvfb-run": {"-s", "-n", "-e", "-f", "-p", "-w", "--server-args", "--server-num"},
            "dbus-run-session": set(), "env": set(), "time": set(), "sudo": set(),
            "exec": set()}

n = 0
failed = False


def tap(ok, what, details=()):
    global n, failed
    n += 1
    failed |= not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    for d in details:
        for line in str(d).splitlines():
            print("# " + line)


def skip(what):
    global n
    n += 1
    print("ok %d - %s # SKIP" % (n, what))


_help = {}


def help_options(twb, command):
    """The options `twb COMMAND --help` prints (None: the window's)."""
    if command not in _help:
        args = [twb, "--help-gui"] if command is None else [twb, command, "--help"]
        env = dict(os.environ)
        env.pop("DISPLAY", None)
        env.pop("WAYLAND_DISPLAY", None)
        out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        _help[command] = set(OPTION.findall(out.stdout + out.stderr)) - ALWAYS
    return _help[command]


def sh_blocks(path):
    """[(first line number, run?, [logical lines])] of the sh blocks."""
    blocks, cur = [], None
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            m = re.match(r"^```(\S*)(.*)$", line.rstrip("\n"))
            if m and cur is None:
                if m.group(1) == "sh":
                    cur = (i, "run" in m.group(2).split(), [])
                else:
                    cur = (i, None, None)
                continue
            if m and cur is not None:
                if cur[1] is not None:
                    blocks.append(cur)
                cur = None
                continue
            if cur is not None and cur[2] is not None:
                lines = cur[2]
                if lines and lines[-1].endswith("\\"):
                    lines[-1] = lines[-1][:-1] + " " + line.strip()
                else:
                    lines.append(line.rstrip("\n"))
    return blocks


def simple_commands(line):
    """A line's simple commands, each a token list.  A piece after a lone |
    that starts with an option or a bracket continues a synopsis
    (`[--dynamic-batch | --batch N]`), not a pipeline."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError as e:
        return None, str(e)
    cmds, cur = [], []
    for i, t in enumerate(tokens):
        if t in ("|", "&&", "||", ";"):
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            if t == "|" and nxt[:1] in ("-", "["):
                continue
            cmds.append(cur)
            cur = []
        else:
            cur.append(t)
    cmds.append(cur)
    return [c for c in cmds if c], None


def strip_wrappers(cmd):
    while cmd and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cmd[0]):
        cmd = cmd[1:]
    while cmd and cmd[0] in WRAPPERS:
        takes = WRAPPERS[cmd[0]]
        cmd = cmd[1:]
        while cmd and cmd[0].startswith("-"):
            opt = cmd[0].split("=")[0]
            cmd = cmd[1:]
            if opt == "--":
                break
            if cmd and opt in takes:
                cmd = cmd[1:]
        while cmd and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cmd[0]):
            cmd = cmd[1:]
    return cmd


def bench_programs(root):
    text = open(os.path.join(root, "bench", "meson.build")).read()
    return set(re.findall(r"executable\('([\w-]+)'", text))


def check_twb(twb, args):
    """Problems with one twb invocation's arguments."""
    words = [a.strip("[]").rstrip(".…") for a in args]
    words = [w for w in words if w]
    command = next((w for w in words if not w.startswith("-")), None)
    sub = command if command in COMMANDS else None
    if sub is None and words and not words[0].startswith("-") and "." not in words[0] \
       and "/" not in words[0] and not words[0].isupper():
        return ["'%s' is no twb command" % words[0]]
    known = help_options(twb, sub)
    if sub is None and not known:
        return []                       # built without the window
    bad = []
    for w in words:
        for part in w.split("|"):
            if not part.startswith("-") or part == "--" or re.match(r"^-\d", part):
                continue
            name = part.split("=")[0]
            if name not in known and name not in ALWAYS:
                bad.append("twb %s: no option %s (in %s --help: %s)" %
                           (sub or "(the window)", name, sub or "--help-gui",
                            " ".join(sorted(known))))
    return bad


def mode_commands(twb, root):
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    benches = bench_programs(root)
    runs = []
    for path in docs:
        rel = os.path.relpath(path, root)
        problems, count = [], 0
        for first, run, lines in sh_blocks(path):
            if run:
                runs.append((rel, first, lines))
            for line in lines:
                cmds, err = simple_commands(line)
                if err:
                    problems.append("%s:%d: %s: %s" % (rel, first, err, line))
                    continue
                for cmd in cmds:
                    cmd = strip_wrappers(cmd)
                    if not cmd:
                        continue
                    prog = cmd[0]
                    where = "%s (block at line %d): %s" % (rel, first, line.strip())
                    if os.path.basename(prog) == "twb":
                        count += 1
                        problems += ["%s: %s" % (where, p) for p in check_twb(twb, cmd[1:])]
                    elif prog.startswith("build/bench/"):
                        if prog[len("build/bench/"):] not in benches:
                            problems.append("%s: no benchmark %s in bench/meson.build" % (where, prog))
                    elif "/" in prog and not prog.startswith(("/", "~", "$", ".")):
                        if not os.path.exists(os.path.join(root, prog)):
                            problems.append("%s: %s does not exist" % (where, prog))
        tap(not problems, "%s: %d twb commands name commands and options twb has, and files that exist"
            % (rel, count), problems)
    for rel, first, lines in runs:
        run_block(twb, root, rel, first, lines)


_scratch = {}


def run_block(twb, root, rel, first, lines):
    if rel not in _scratch:
        d = tempfile.mkdtemp(prefix="twb-docs-")
        os.symlink(os.path.join(os.path.abspath(root), "assets"), os.path.join(d, "assets"))
        os.makedirs(os.path.join(d, "build", "app"))
        os.makedirs(os.path.join(d, ".bin"))
        os.symlink(os.path.abspath(twb), os.path.join(d, "build", "app", "twb"))
        os.symlink(os.path.abspath(twb), os.path.join(d, ".bin", "twb"))
        _scratch[rel] = d
        atexit.register(shutil.rmtree, d, True)
    d = _scratch[rel]
    env = dict(os.environ)
    env["PATH"] = os.path.join(d, ".bin") + os.pathsep + env.get("PATH", "")
    env["XDG_CACHE_HOME"] = os.path.join(d, ".cache")
    env.pop("DISPLAY", None)
    script = "set -e -o pipefail\n" + "\n".join(lines) + "\n"
    try:
        out = subprocess.run(["bash", "-c", script], cwd=d, env=env, capture_output=True,
                             text=True, timeout=120)
        ok = out.returncode == 0
        log = (out.stdout + out.stderr)[-3000:]
    except subprocess.TimeoutExpired:
        ok, log = False, "timed out after 120 s"
    tap(ok, "%s: the runnable block at line %d runs" % (rel, first),
        () if ok else [script, log])


def md_sections(path):
    """{command: options named in the first column of its tables}."""
    sections, cur = {}, None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^## twb ([\w-]+)\s*$", line)
        if m:
            cur = sections.setdefault(m.group(1), set())
            continue
        if line.startswith("## "):
            cur = sections.setdefault(None, set()) if "window's options" in line else None
            continue
        if cur is not None and line.startswith("| "):
            cell = re.split(r"(?<!\\)\|", line)[1]
            cur |= set(OPTION.findall(" ".join(re.findall(r"`([^`]*)`", cell))))
    return sections


def compare_sections(twb, label, sections):
    """One TAP line per command: its section names exactly --help's options."""
    for sub in COMMANDS + [None]:
        name = "twb %s" % sub if sub else "the window's options"
        have = sections.get(sub)
        if have is None:
            tap(False, "%s has a section for %s" % (label, name))
            continue
        want = help_options(twb, sub)
        if sub is None and not want:
            skip("%s, %s: built without the window" % (label, name))
            continue
        missing, extra = sorted(want - have), sorted(have - want - ALWAYS)
        tap(not missing and not extra, "%s, %s: the options --help prints" % (label, name),
            (["missing: " + " ".join(missing)] if missing else [])
            + (["not in --help: " + " ".join(extra)] if extra else []))


def mode_cli_md(twb, root):
    compare_sections(twb, "docs/cli.md", md_sections(os.path.join(root, "docs", "cli.md")))


def man_sections(path):
    sections, cur, tag = {}, None, False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        m = re.match(r'^\.SS "twb (\[OPTIONS\]|[\w-]+)', line)
        if m:
            word = m.group(1)
            cur = sections.setdefault(None if word == "[OPTIONS]" else word, set())
            continue
        if line.startswith(".SH"):
            cur = None
            continue
        if line == ".TP":
            tag = True
            continue
        if tag and cur is not None:
            text = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-")
            cur |= set(OPTION.findall(text))
        tag = False
    return sections


def mode_man(twb, page):
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    try:
        out = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                             env=env, timeout=60)
        warnings = [l for l in out.stderr.splitlines() if l.strip()]
        tap(out.returncode == 0 and not warnings and "twb train" in out.stdout,
            "man --warnings -l twb.1: renders, no warnings", warnings)
    except FileNotFoundError:
        skip("man --warnings -l twb.1: no man here")
    compare_sections(twb, "twb.1", man_sections(page))


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^#+ (.*)$", line.rstrip())
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower().replace("`", ""))
            out.add(a.replace(" ", "-"))
    return out


def mode_links(twb, root):
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for path in docs:
        rel = os.path.relpath(path, root)
        text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
        bad, count = [], 0
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            count += 1
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                bad.append("%s: no such file" % target)
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append("%s: no heading for #%s in %s" % (target, anchor,
                                                            os.path.relpath(dest, root)))
        tap(not bad, "%s: its %d links and pictures point at what exists" % (rel, count), bad)


def main():
    mode, twb, where = sys.argv[1], sys.argv[2], sys.argv[3]
    {"commands": mode_commands, "cli-md": mode_cli_md, "man": mode_man,
     "links": mode_links}[mode](twb, where)
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

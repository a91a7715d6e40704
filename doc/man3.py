#!/usr/bin/env python3
"""Writes one man3 page per public function from Doxygen's XML output.

    python3 doc/man3.py XMLDIR OUTDIR VERSION

Doxygen's own man pages are named after the headers (array.h.3); users look
for `man 3 gpumem_to_device`.  This reads XMLDIR/*_8h.xml (the headers'
comments, as `make doc` or the build writes them) and writes
OUTDIR/<function>.3 for every function: NAME, SYNOPSIS (the header and the
prototype), DESCRIPTION, PARAMETERS, RETURN VALUE, EXAMPLES (from an
`@par Example` paragraph, whose @code block tests/test-man-examples.sh
compiles and runs) and SEE ALSO.  The date is
SOURCE_DATE_EPOCH's when it is set, so that builds are reproducible.
Only the standard library is used.
"""
import glob
import os
import re
import sys
import time
import xml.etree.ElementTree as ET


def esc(text):
    """Escapes text for roff: backslashes, and dashes as minus signs."""
    return text.replace("\\", "\\e").replace("-", "\\-")


def line_start(text):
    """Protects a line that would start with a control character."""
    return "\\&" + text if text[:1] in (".", "'") else text


class Writer:
    """Turns Doxygen's description markup into roff."""

    def __init__(self, functions):
        self.functions = functions  # names that have a page of their own

    def inline(self, node):
        out = [esc(node.text or "")]
        for child in node:
            out.append(self.element(child))
            out.append(esc(child.tail or ""))
        return "".join(out)

    def element(self, node):
        tag = node.tag
        if tag == "computeroutput":
            return "\\fB" + self.inline(node) + "\\fP"
        if tag in ("emphasis",):
            return "\\fI" + self.inline(node) + "\\fP"
        if tag == "bold":
            return "\\fB" + self.inline(node) + "\\fP"
        if tag == "ref":
            name = "".join(node.itertext())
            bare = name[:-2] if name.endswith("()") else name
            if bare in self.functions:
                return "\\fB" + esc(bare) + "\\fP(3)"
            return "\\fB" + esc(name) + "\\fP"
        if tag == "ulink":
            return self.inline(node) + " <" + esc(node.get("url", "")) + ">"
        if tag == "sp":
            return " "
        if tag in ("ndash", "mdash"):
            return "\\(en" if tag == "ndash" else "\\(em"
        if tag in ("simplesect", "parameterlist", "itemizedlist", "orderedlist",
                   "programlisting", "table", "verbatim"):
            return ""  # block elements: handled by blocks()
        return self.inline(node)

    def blocks(self, para, out, sections):
        """Writes one <para>: its text, then the blocks nested in it."""
        text = [esc(para.text or "")]
        def flush():
            joined = re.sub(r"\s+", " ", "".join(text)).strip()
            if joined:
                out.append(".PP")
                out.append(line_start(joined))
            text.clear()
        for child in para:
            tag = child.tag
            if tag in ("itemizedlist", "orderedlist"):
                flush()
                for n, item in enumerate(child.findall("listitem"), 1):
                    out.append('.IP "%s" 4' % ("\\(bu" if tag == "itemizedlist" else "%d." % n))
                    sub = []
                    for p in item.findall("para"):
                        self.blocks(p, sub, sections)
                    out.extend(l for l in sub if l != ".PP")
                out.append(".PP")
            elif tag == "simplesect":
                flush()
                kind = child.get("kind")
                sub = []
                for p in child.findall("para"):
                    self.blocks(p, sub, sections)
                if kind == "return":
                    sections.setdefault("RETURN VALUE", []).extend(sub)
                elif kind == "see":
                    sections.setdefault("SEE ALSO", []).extend(sub)
                else:
                    title = (child.findtext("title") or kind.capitalize()).strip()
                    if kind == "par" and title in ("Example", "Examples"):
                        sections.setdefault("EXAMPLES", []).extend(sub)
                    else:
                        out.append(".PP")
                        out.append("\\fB" + esc(title) + "\\fP")
                        out.extend(sub)
            elif tag == "parameterlist":
                flush()
                kind = child.get("kind")
                key = "PARAMETERS" if kind == "param" else "RETURN VALUE"
                dest = sections.setdefault(key, [])
                for item in child.findall("parameteritem"):
                    names = ", ".join(esc("".join(n.itertext()))
                                      for n in item.iter("parametername"))
                    dest.append(".TP")
                    dest.append(("\\fI%s\\fP" if kind == "param" else "\\fB%s\\fP") % names)
                    sub = []
                    for p in item.find("parameterdescription").findall("para"):
                        self.blocks(p, sub, sections)
                    dest.extend(l for l in sub if l != ".PP")
            elif tag in ("programlisting", "verbatim"):
                flush()
                out.append(".PP")
                out.append(".nf")
                out.append(".RS 4")
                if tag == "verbatim":
                    lines = (child.text or "").splitlines()
                else:
                    lines = [self.codeline(cl) for cl in child.findall("codeline")]
                out.extend(line_start(l) for l in lines)
                out.append(".RE")
                out.append(".fi")
            elif tag == "table":
                flush()
                out.append(".PP")
                out.append(".nf")
                for row in child.findall("row"):
                    cells = [re.sub(r"\s+", " ", "".join(e.itertext())).strip()
                             for e in row.findall("entry")]
                    out.append(line_start(esc(" | ".join(cells))))
                out.append(".fi")
            else:
                text.append(self.element(child))
            text.append(esc(child.tail or ""))
        flush()

    def codeline(self, cl):
        parts = []
        for h in cl.findall("highlight"):
            parts.append(esc(h.text or ""))
            for c in h:
                parts.append(" " if c.tag == "sp" else esc("".join(c.itertext())))
                parts.append(esc(c.tail or ""))
        return "".join(parts)

    def description(self, node, sections):
        out = []
        if node is not None:
            for para in node.findall("para"):
                self.blocks(para, out, sections)
        return out


def plain(node):
    return re.sub(r"\s+", " ", "".join(node.itertext())).strip() if node is not None else ""


def whatis(member):
    """The NAME line's summary: the brief, else the first sentence."""
    text = plain(member.find("briefdescription")) or plain(member.find("detaileddescription"))
    text = re.split(r"(?<=[a-z0-9)])\.\s", text + " ", maxsplit=1)[0].strip().rstrip(".")
    return text or "a libgpumem function"


def synopsis(member, header):
    ret = plain(member.find("type"))
    name = member.findtext("name")
    params = member.findall("param")
    lines = [".nf", ".B #include <%s>" % header, ".PP"]
    head = "%s %s(" % (ret, name)
    if not params or (len(params) == 1 and plain(params[0].find("type")) == "void"
                      and params[0].find("declname") is None):
        lines.append('.B "%s);"' % esc(head + "void"))
    for i, p in enumerate(params):
        if len(params) == 1 and p.find("declname") is None and plain(p.find("type")) == "void":
            break
        ptype = plain(p.find("type"))
        decl = p.findtext("declname") or ""
        array = p.findtext("array") or ""
        prefix = head if i == 0 else " " * len(head)
        sep = ptype if ptype.endswith("*") else ptype + " "
        end = ");" if i == len(params) - 1 else ","
        lines.append('.BI "%s" %s "%s"' % (esc(prefix + sep), esc(decl), esc(array + end)))
    lines.append(".fi")
    lines.append(".PP")
    lines.append("Compile and link with \\fIpkg\\-config \\-\\-cflags \\-\\-libs gpumem\\fP.")
    return lines


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: man3.py XMLDIR OUTDIR VERSION")
    xmldir, outdir, version = sys.argv[1:]
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
    date = time.strftime("%Y-%m-%d", time.gmtime(epoch))

    members = []  # (header, member)
    for path in sorted(glob.glob(os.path.join(xmldir, "*_8h.xml"))):
        root = ET.parse(path).getroot()
        for compound in root.iter("compounddef"):
            if compound.get("kind") != "file":
                continue
            for m in compound.iter("memberdef"):
                if m.get("kind") == "function" and m.findtext("name", "").startswith("gpumem_"):
                    header = m.find("location").get("file")
                    members.append((header, m))
    if not members:
        sys.exit("man3.py: no functions in %s/*_8h.xml" % xmldir)
    functions = {m.findtext("name") for _, m in members}
    by_header = {}
    for header, m in members:
        by_header.setdefault(header, []).append(m.findtext("name"))
    writer = Writer(functions)

    os.makedirs(outdir, exist_ok=True)
    for old in glob.glob(os.path.join(outdir, "*.3")):
        os.remove(old)
    for header, m in members:
        name = m.findtext("name")
        sections = {}
        body = writer.description(m.find("briefdescription"), sections)
        body += writer.description(m.find("detaileddescription"), sections)
        page = ['.\\" Generated by doc/man3.py from the comments in <%s>; do not edit.' % header,
                '.TH %s 3 "%s" "libgpumem %s" "libgpumem Manual"' % (esc(name.upper()), date, version),
                ".nh",    # no hyphenation inside long function names
                ".ad l",  # nor stretched lines
                ".SH NAME",
                "%s \\- %s" % (esc(name), whatis(m)),
                ".SH SYNOPSIS"]
        page += synopsis(m, header)
        page.append(".SH DESCRIPTION")
        page += body or [".PP", "See \\fI<%s>\\fP." % esc(header)]
        if "PARAMETERS" in sections:
            page.append(".SH PARAMETERS")
            page += sections["PARAMETERS"]
        page.append(".SH RETURN VALUE")
        if "RETURN VALUE" in sections:
            page += sections["RETURN VALUE"]
        elif plain(m.find("type")) == "gpumem_status":
            page += [".PP",
                     "\\fBGPUMEM_OK\\fP on success; otherwise a status that "
                     "\\fBgpumem_status_string\\fP(3) names, and "
                     "\\fBgpumem_last_error\\fP(3) gives the calling thread's message "
                     "(which argument, which limit, the driver's own error).  "
                     "\\fBgpumem\\fP(7) says what a failing call may have changed."]
        else:
            page += [".PP", "See \\fBDESCRIPTION\\fP."]
        if "EXAMPLES" in sections:
            page.append(".SH EXAMPLES")
            page += sections["EXAMPLES"]
        page.append(".SH SEE ALSO")
        page += [l for l in sections.get("SEE ALSO", []) if l != ".PP"]
        others = [f for f in by_header[header] if f != name]
        page.append(".PP")
        if others:
            page.append("The other functions of \\fI<%s>\\fP: " % esc(header)
                        + ", ".join("\\fB%s\\fP(3)" % esc(f) for f in others) + ".")
        page.append("The overview: \\fBgpumem\\fP(7).")
        with open(os.path.join(outdir, name + ".3"), "w", encoding="utf-8") as f:
            f.write("\n".join(page) + "\n")
    print("man3.py: %d pages in %s" % (len(members), outdir))


if __name__ == "__main__":
    main()

"""Probe markups through three schema.org shape sets, for the table in shapes/README.md.

    .venv/bin/python -m shapes.compare      (a few minutes: pySHACL with ~1,000-shape files)

Shape sets: schema.org's own (data/schemaorg-30.0/schemaorg-shapes.shacl), pySHACL's bundled
pyshacl/assets/schema.ttl (plain, and with RDFS inference over the schema.org vocabulary as the
ontology graph), and ours (lenient and strict, through udfs.agents.validity's pySHACL engine).
A probe is "accept" when the validation conforms (ours: when every triple is valid).
"""

import os
import sys
from pathlib import Path

import pyshacl
import rdflib
from pyshacl import validate

from udfs.schemaorg.namespace import SCHEMA_NS, SCHEMA_NS_RE

ROOT = Path(__file__).resolve().parent.parent
PYSHACL_SCHEMA = str(Path(pyshacl.__file__).parent / "assets" / "schema.ttl")
PRE = f"@prefix s: <{SCHEMA_NS}> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
probes = {
    "P1 Recipe name 'Pie' (inherited, Text)": '_:r a s:Recipe ; s:name "Pie" .',
    "P2 Recipe recipeCategory 'Dessert' (own, Text)": '_:r a s:Recipe ; s:recipeCategory "Dessert" .',
    "P3 Recipe cookoo 'x' (undefined property)": '_:r a s:Recipe ; s:cookoo "x" .',
    "P4 Recipe author 'Jane' (literal, range Person/Organization)": '_:r a s:Recipe ; s:author "Jane" .',
    "P5 Recipe recipeInstructions a Person": '_:r a s:Recipe ; s:recipeInstructions _:p . _:p a s:Person ; s:name "P" .',
    "P6 Recipe recipeInstructions a HowToStep (subtype)": '_:r a s:Recipe ; s:recipeInstructions _:p . _:p a s:HowToStep ; s:text "Bake" .',
    "P7 Recipe recipeInstructions untyped node": '_:r a s:Recipe ; s:recipeInstructions _:p . _:p s:text "Bake" .',
    "P8 Book numberOfPages '224' (number as string)": '_:r a s:Book ; s:numberOfPages "224" .',
    "P9 Book numberOfPages 224": "_:r a s:Book ; s:numberOfPages 224 .",
    "P10 Offer availability 'https://schema.org/InStock' (string)": '_:r a s:Offer ; s:availability "https://schema.org/InStock" .',
    "P11 Offer availability s:InStock (IRI)": "_:r a s:Offer ; s:availability s:InStock .",
    "P12 Offer availability s:Monday (member of another enumeration)": "_:r a s:Offer ; s:availability s:Monday .",
    "P13 Recipee name 'x' (undefined type)": '_:r a s:Recipee ; s:name "x" .',
    "P14 Event startDate '2024-05-01'": '_:r a s:Event ; s:startDate "2024-05-01" .',
    "P15 Event startDate 'tomorrow'": '_:r a s:Event ; s:startDate "tomorrow" .',
    "P16 WebPage url 'https://x.example' (string)": '_:r a s:WebPage ; s:url "https://x.example" .',
    "P17 WebPage url <https://x.example> (IRI)": "_:r a s:WebPage ; s:url <https://x.example> .",
    "P18 untyped subject with name": '_:r s:name "x" .',
}
shape_sets = {
    "schema.org shapes": ("data/schemaorg-30.0/schemaorg-shapes.shacl", False),
    "pySHACL schema.ttl": (PYSHACL_SCHEMA, False),
    "pySHACL schema.ttl + RDFS inference with the vocabulary": (PYSHACL_SCHEMA, True),
}


def main() -> None:
    os.chdir(ROOT)
    vocab = rdflib.Graph().parse("data/schemaorg-30.0/schemaorg-current-https.nt")

    # the vocabulary in SCHEMA_NS (the data's namespace)
    def f(t):
        return rdflib.URIRef(SCHEMA_NS_RE.sub(SCHEMA_NS, str(t))) if isinstance(t, rdflib.URIRef) else t

    vocab_http = rdflib.Graph()
    for s_, p_, o_ in vocab:
        vocab_http.add((f(s_), f(p_), f(o_)))
    res = {}
    for name, (path, infer) in shape_sets.items():
        sg = rdflib.Graph().parse(path, format="turtle")
        for pname, ttl in probes.items():
            dg = rdflib.Graph().parse(data=PRE + ttl, format="turtle")
            kw = dict(ont_graph=vocab_http, inference="rdfs") if infer else {}
            conforms, rg, txt = validate(dg, shacl_graph=sg, advanced=True, **kw)
            res.setdefault(pname, {})[name] = "accept" if conforms else "reject"
        print(name, "done", file=sys.stderr, flush=True)
    from udfs.agents.validity import ValidityAgent

    # ours, through the same data graphs: the JSON-LD equivalents
    ours_docs = {
        "P1": {"@type": "Recipe", "name": "Pie"},
        "P2": {"@type": "Recipe", "recipeCategory": "Dessert"},
        "P3": {"@type": "Recipe", "cookoo": "x"},
        "P4": {"@type": "Recipe", "author": "Jane"},
        "P5": {"@type": "Recipe", "recipeInstructions": {"@type": "Person", "name": "P"}},
        "P6": {"@type": "Recipe", "recipeInstructions": {"@type": "HowToStep", "text": "Bake"}},
        "P7": {"@type": "Recipe", "recipeInstructions": {"text": "Bake"}},
        "P8": {"@type": "Book", "numberOfPages": "224"},
        "P9": {"@type": "Book", "numberOfPages": 224},
        "P10": {"@type": "Offer", "availability": "https://schema.org/InStock"},
        "P11": {"@type": "Offer", "availability": {"@id": "schema:InStock"}},
        "P12": {"@type": "Offer", "availability": {"@id": "schema:Monday"}},
        "P13": {"@type": "Recipee", "name": "x"},
        "P14": {"@type": "Event", "startDate": "2024-05-01"},
        "P15": {"@type": "Event", "startDate": "tomorrow"},
        "P16": {"@context": {"@vocab": "http://schema.org/"}, "@type": "WebPage", "url": "https://x.example"},
        "P17": {"@type": "WebPage", "url": "https://x.example"},
        "P18": {"name": "x"},
    }
    for strict in (False, True):
        a = ValidityAgent("pyshacl", strict, None, "schemaorg")
        for pname in probes:
            r = a.validate(ours_docs[pname.split()[0]])
            res[pname]["ours " + ("strict" if strict else "lenient")] = (
                "accept" if all(v.valid for v in r.verdicts) else "reject"
            )
    cols = list(next(iter(res.values())).keys())
    print("| probe | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for p, r in res.items():
        print(f"| {p} | " + " | ".join(r[c] for c in cols) + " |")


if __name__ == "__main__":
    main()

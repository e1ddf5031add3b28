#!/usr/bin/env python3
"""Independent link-graph measures of an Obsidian vault, for the graph tools' tests.

    python graph_oracle.py VAULT_DIR [CYCLE_BOUND]   ->  one JSON object on stdout
    python graph_oracle.py VAULT_DIR --modularity    <  a partition: [[path, ...], ...]
                                                   ->  {"modularity": q}

The edges come from count_vault.py (the tests' own link resolver, which shares no code with
the server) and every measure from networkx, so nothing here ports the server's Rust. Nodes
are the vault's notes outside hidden folders; an edge joins two different notes one links to
(body link, embed or property link), however many links it holds.

Output: nodes, edges, edge_list, links (every link the notes hold, same-note links left out),
unresolved, orphans, dead_ends, components (sizes, largest first), pagerank, betweenness,
in_degree, out_degree (per path), cycles ({length: count} up to CYCLE_BOUND links, default 11),
louvain (the best
modularity of seeds 0..4 on the undirected graph whose weight is the number of directions two
notes link in), pairs (per sampled pair: directed and undirected distance, links each way,
shared targets and sources, Jaccard of neighbourhoods).
"""
import json
import os
import sys
from collections import Counter

import networkx as nx
# networkx's pure-Python PageRank (the public one needs numpy and scipy): the same power iteration.
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus"))
import count_vault  # noqa: E402


def hidden(path: str) -> bool:
    return path.split("/")[0] in (".obsidian", ".trash", ".git")


def main(argv):
    root = argv[1]
    counted = count_vault.count_vault(root)
    notes = sorted(p for p in counted["per_note"] if not hidden(p))
    note_set = set(notes)
    g = nx.DiGraph()
    g.add_nodes_from(notes)
    multiplicity = Counter()
    for source, pairs in counted["resolved"].items():
        if source not in note_set:
            continue
        for _target, dest in pairs:
            if dest in note_set and dest != source:
                multiplicity[(source, dest)] += 1
                g.add_edge(source, dest)
    links = 0
    unresolved = 0
    for path in notes:
        c = counted["per_note"][path]
        links += c["body_links"] + c["embeds"] + c["property_links"]
        unresolved += c["unresolved"]

    undirected = nx.Graph()
    undirected.add_nodes_from(notes)
    for a, b in g.edges():
        if undirected.has_edge(a, b):
            undirected[a][b]["weight"] += 1
        else:
            undirected.add_edge(a, b, weight=1)

    if len(argv) > 2 and argv[2] == "--modularity":
        partition = [set(c) for c in json.load(sys.stdin)]
        q = nx.community.modularity(undirected, partition, weight="weight") if g.number_of_edges() else 0.0
        json.dump({"modularity": q}, sys.stdout)
        sys.stdout.write("\n")
        return 0

    bound = int(argv[2]) if len(argv) > 2 else 11
    cycles = Counter(len(c) for c in nx.simple_cycles(g, length_bound=bound))
    best = max(
        nx.community.modularity(undirected, nx.community.louvain_communities(undirected, weight="weight", seed=s), weight="weight")
        for s in range(5)
    ) if g.number_of_edges() else 0.0

    # Pairs: the most linked notes against each other and against a few unlinked ones.
    ranked = sorted(notes, key=lambda p: (-(g.in_degree(p) + g.out_degree(p)), p))
    sample = ranked[:6] + ranked[-3:]
    pairs = []
    for i, a in enumerate(sample):
        for b in sample[i + 1:]:
            def dist(graph):
                try:
                    return nx.shortest_path_length(graph, a, b)
                except nx.NetworkXNoPath:
                    return None
            hood_a = (set(g.successors(a)) | set(g.predecessors(a))) - {b}
            hood_b = (set(g.successors(b)) | set(g.predecessors(b))) - {a}
            union = hood_a | hood_b
            pairs.append({
                "from": a, "to": b,
                "directed": dist(g), "undirected": dist(undirected),
                "forward": multiplicity[(a, b)], "backward": multiplicity[(b, a)],
                "shared_targets": len(set(g.successors(a)) & set(g.successors(b))),
                "shared_sources": len(set(g.predecessors(a)) & set(g.predecessors(b))),
                "jaccard": len(hood_a & hood_b) / len(union) if union else 0.0,
            })

    out = {
        "nodes": g.number_of_nodes(),
        "edges": g.number_of_edges(),
        "edge_list": sorted(g.edges()),
        "links": links,
        "unresolved": unresolved,
        "orphans": sum(1 for p in notes if g.in_degree(p) == 0),
        "dead_ends": sum(1 for p in notes if g.out_degree(p) == 0),
        "components": sorted((len(c) for c in nx.weakly_connected_components(g)), reverse=True),
        "pagerank": _pagerank_python(g, alpha=0.85, tol=1e-6, max_iter=100) if notes else {},
        "betweenness": nx.betweenness_centrality(g, normalized=True),
        "in_degree": dict(g.in_degree()),
        "out_degree": dict(g.out_degree()),
        "cycles": {str(k): v for k, v in sorted(cycles.items())},
        "louvain": best,
        "pairs": pairs,
    }
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

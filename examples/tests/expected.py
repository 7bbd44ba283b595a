"""What the review agent should make of the sample reviews (examples/data/reviews.jsonl)."""

#: What the scripted model (a keyword heuristic) makes of each review.
SCRIPTED = {
    "r01": (5, []),
    "r02": (1, ["damaged in shipping"]),
    "r03": (3, ["mixed experience"]),
    "r04": (3, ["mixed experience"]),
    "r05": (5, []),
    "r06": (1, ["damaged in shipping"]),
    "r07": (3, ["mixed experience"]),
    "r08": (3, ["mixed experience"]),
}
DAMAGED = ["r02", "r06"]

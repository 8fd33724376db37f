"""Property test of the public API (``iclr24.persona_bias.__all__``): wrong types, empty inputs, bad numbers and
wrong file kinds either work or raise InputError; nothing else escapes."""

import iclr24.persona_bias as pb
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {
    "Backend": "the abstract backend interface",
    "EndpointError": "an error class (a failing endpoint, not bad input)",
    "Comparison": "a result record (compare_personas is probed)",
    "Completion": "a backend's result record",
    "RunSummary": "a result record (run_evaluation is probed)",
    "Prompt": "a prompt record (build_prompt is probed)",
    "TransformersBackend": "needs a local model; its arguments are probed in test_backends",
    "OpenAIBackend": "talks to an endpoint; probed below only for its arguments",
    "LoopbackServer": "a test server (its planted bias is probed)",
}

TEXTS = [("None", None), ("int", 3), ("empty", ""), ("binary", "\x00\xff"), ("long", "x" * 100_000)]


def test_public_api_refuses_bad_input(tmp_path):
    p = Prober()
    items = pb.builtin_questions("arithmetic", n=4, seed=0)
    item = items[0]
    # text functions
    for f in (pb.extract_answer, pb.detect_abstention):
        p.sweep(f, 0, TEXTS)
    p.sweep(pb.extract_bbh_answer, 0, TEXTS, "boolean_expressions")
    p.sweep(pb.extract_bbh_answer, 1, [("unknown", "no_such_task"), ("int", 3)], "True")
    p.sweep(pb.references_persona, 0, TEXTS, "a doctor")
    p.sweep(pb.references_persona, 1, [("None", None), ("int", 3), ("empty", "")], "hello")
    p.sweep(pb.format_mc_question, 1, [("empty", []), ("not strings", [1, 2]), ("str", "abc")], "Q?")
    p.sweep(pb.format_mc_question, 0, [("None", None), ("int", 3)], ["a", "b"])
    # prompts and personas
    p.sweep(pb.system_prompt, 0, [("None", None), ("int", 3)])
    p.sweep(pb.system_prompt, 1, [("unknown", "no_template"), ("int", 3)], "a doctor")
    p.sweep(pb.user_prompt, 0, [("not an item", "question"), ("None", None)])
    p.sweep(pb.build_prompt, 0, [("not an item", "question")], "a doctor")
    p.sweep(pb.build_prompt, "template", [("unknown", "no_template")], item, "a doctor")
    p.sweep(pb.resolve_personas, 0, [("unknown", "martian"), ("empty", ""), ("int", 3), ("empty list", [])])
    p.sweep(pb.builtin_questions, 0, [("unknown", "chess"), ("int", 3)])
    p.sweep(pb.builtin_questions, "n", probe_sizes())
    p.sweep(pb.Item, 1, [("None", None), ("int", 3)], 0, "4", "arithmetic")
    # configs
    for field in ("temperature", "top_p"):
        p.sweep(pb.GenerationConfig, field, probe_floats())
    p.sweep(pb.GenerationConfig, "max_tokens", probe_sizes())
    p.sweep(pb.GenerationConfig, "n", probe_sizes())
    for field in ("p_correct", "noise", "no_answer"):
        p.sweep(pb.PlantedBias, field, probe_floats())
    p.sweep(pb.OpenAIBackend, "concurrency", probe_sizes(), "http://127.0.0.1:9", "m")
    p.sweep(pb.OpenAIBackend, "timeout", probe_floats(), "http://127.0.0.1:9", "m")
    p.sweep(pb.OpenAIBackend, 0, [("not a url", "ftp:/x"), ("int", 3)], "m")
    p.sweep(pb.ScriptedBackend, 0, [("not callable", 3)])
    # scoring and statistics
    p.sweep(pb.score_response, 0, [("not an item", "q")], "4")
    p.sweep(pb.score_response, 1, TEXTS, item)
    p.sweep(pb.score_records, 0, [("not records", [1, 2]), ("missing keys", [{"a": 1}]), ("None", None)])
    p.sweep(
        pb.compare_personas, 0, [("empty", []), ("not records", [1]), ("missing keys", [{"persona": "x"}])]
    )
    p.sweep(pb.compare_personas, "alpha", probe_floats(), [])
    p.sweep(pb.compare_personas, "test", [("unknown", "ttest")], [])
    p.sweep(pb.compare_personas, "correction", [("unknown", "magic")], [])
    p.sweep(pb.percent_personas_biased, 0, [("empty", []), ("not comparisons", [1, 2])])
    p.sweep(pb.persona_summary, 0, [("empty", []), ("not comparisons", [1, 2])])
    p.sweep(pb.run_mbpp, 0, TEXTS[:3], timeout=2.0, isolation="process")
    p.sweep(pb.run_mbpp, "timeout", probe_floats(), "x = 1")
    p.sweep(pb.run_mbpp, "isolation", [("unknown", "docker")], "x = 1")
    # the pipeline
    backend = pb.ScriptedBackend(lambda prompt: "The answer is (A)")
    store = pb.RunStore(tmp_path / "run.jsonl")
    p.sweep(pb.run_evaluation, 1, [("empty", []), ("not items", [1, 2])], backend, ["a doctor"], store)
    p.sweep(pb.run_evaluation, 2, [("empty", []), ("unknown", ["martian"]), ("str", "a doctor")], backend, items,
            store)  # fmt: skip
    p.sweep(pb.run_evaluation, 0, [("not a backend", object())], items, ["a doctor"], store)
    (tmp_path / "a-file").write_text("x")
    p.sweep(
        pb.run_evaluation,
        "callbacks",
        [("int", 3), ("list of int", [3])],
        backend,
        items,
        ["a doctor"],
        store,
    )
    p.sweep(
        pb.run_evaluation, "log_dir", [("a file", tmp_path / "a-file")], backend, items, ["a doctor"], store
    )
    p.sweep(pb.judge_abstentions, 1, [("not records", [1, 2])], backend)
    p.sweep(pb.RunStore, 0, [("folder", tmp_path)])
    p.sweep(pb.export_official, 0, [("not records", [1, 2])], tmp_path / "exp")
    p.sweep(pb.export_official, 1, [("a file", tmp_path / "run.jsonl")], [])
    # loaders
    for suffix in (".jsonl", ".json", ".csv", ""):
        files = probe_files(tmp_path, suffix)
        p.sweep(pb.load_jsonl, 0, files)
        p.sweep(pb.load_mmlu, 0, files)
        p.sweep(pb.load_bbh, 0, files, "boolean_expressions")
        p.sweep(pb.load_mbpp, 0, files)
        p.sweep(pb.load_released, 0, files)
    p.sweep(pb.load_jsonl, "limit", probe_sizes(), tmp_path / "none.jsonl")
    p.sweep(pb.load_dataset, 0, [("unknown", "imagenet"), ("int", 3)], data_dir=tmp_path)
    p.sweep(pb.load_dataset, "builtin_size", probe_sizes(), "arithmetic")
    p.check()
    p.assert_covers(pb, skip=SKIP)

"""Bad input at the Python API: binary dataset files name the file (never a raw UnicodeDecodeError), records that
are not this package's are one InputError naming the missing key, and text functions refuse non-strings."""

import pytest

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.persona_bias import compare_personas
from iclr24.persona_bias import extract_answer
from iclr24.persona_bias import load_jsonl
from iclr24.persona_bias import load_mmlu
from iclr24.persona_bias import references_persona


@pytest.mark.parametrize("load, name", [(load_jsonl, "data.jsonl"), (load_mmlu, "x_test.csv")])
def test_a_binary_dataset_file_names_the_file(tmp_path, load, name):
    p = tmp_path / name
    p.write_bytes(b'{"question": "\xff\xfe"}\n')
    with pytest.raises(InputFileError, match="not utf-8 text") as e:
        load(p)
    assert str(p) in str(e.value)


def test_foreign_records_name_the_missing_key():
    with pytest.raises(InputError, match="lacks 'model'"):
        compare_personas([{"persona": "a human"}])


def test_text_functions_refuse_non_strings():
    with pytest.raises(InputError, match="string"):
        references_persona(3, "a doctor")
    assert extract_answer(None) is None

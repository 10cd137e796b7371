from __future__ import annotations

from monitor.errors import ConfigError, InputError


def test_config_error_names_the_key_on_one_line_even_for_odd_keys() -> None:
    error = ConfigError("evaluation_set.\nx", "unknown key")
    assert "\n" not in str(error)
    assert str(error) == "config key 'evaluation_set.\\nx': unknown key"


def test_input_error_names_file_and_line() -> None:
    assert str(InputError("qrels.txt", "grade is not an integer", 7)) == (
        "qrels.txt:7: grade is not an integer"
    )
    assert str(InputError("run.txt", "no such file")) == "run.txt: no such file"

"""What the docs say that the code decides is generated from the code and current; settings are
read from the environment as their declarations say, and a bad value names its variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.config import AgentSettings
from settings_table import SettingError, from_env, table
from tts_server.settings import ServerSettings
from voice_agent.dev import doc_tables

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(doc_tables.TABLES))
def test_every_generated_table_in_the_docs_is_current(name):
    _, make = doc_tables.TABLES[name]
    assert doc_tables.current(name) == make(), f"run `python -m voice_agent.dev.doc_tables` ({name} is stale)"


def test_every_link_from_the_readme_and_the_docs_to_a_file_resolves():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_readme_fits_on_a_few_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_settings_come_from_their_variables_and_an_unset_or_empty_one_means_the_default():
    settings = from_env(AgentSettings, {"VOICE_AGENT_TTS_RECONNECTS": "6", "VOICE_AGENT_PIPELINING": "0",
                                        "VOICE_AGENT_VOICE": "", "BEDROCK_TEMPERATURE": "0.2"})
    assert (settings.tts_reconnects, settings.pipelining, settings.voice, settings.bedrock_temperature) == \
        (6, False, None, 0.2)
    assert from_env(ServerSettings, {"VOICE_AGENT_MAX_SESSIONS": "3"}).max_sessions == 3
    assert [from_env(ServerSettings, {"VOICE_AGENT_LEAD_MS": value}).lead_ms for value in ("", "0", "75", "Model")] \
        == [150, 0, 75, None]
    assert [from_env(ServerSettings, {"VOICE_AGENT_STATIC_DECODER": value}).static_decoder
            for value in ("", "0", "1")] == [True, False, True]


@pytest.mark.parametrize(("cls", "variable", "value"), [
    (AgentSettings, "VOICE_AGENT_TTS_TIMEOUT", "soon"), (AgentSettings, "VOICE_AGENT_TTS_TIMEOUT", "-1"),
    (AgentSettings, "VOICE_AGENT_MODEL", "gpt"), (AgentSettings, "VOICE_AGENT_PIPELINING", "maybe"),
    (ServerSettings, "VOICE_AGENT_THREADS", "0"), (ServerSettings, "VOICE_AGENT_IDLE_TIMEOUT", "0"),
    (ServerSettings, "VOICE_AGENT_LEAD_MS", "-1"), (ServerSettings, "VOICE_AGENT_LEAD_MS", "all"),
])
def test_a_value_a_setting_cannot_take_is_refused_naming_its_variable(cls, variable, value):
    with pytest.raises(SettingError, match=variable):
        from_env(cls, {variable: value})


def test_every_setting_has_a_variable_of_its_own_and_a_meaning():
    variables = [variable for cls in (AgentSettings, ServerSettings) for variable, _, _, doc in table(cls) if doc]
    assert len(variables) == len(set(variables)) == len(table(AgentSettings)) + len(table(ServerSettings))

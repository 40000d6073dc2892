"""The settings registry: README's table is the registry's, and each owner's record starts from the
defaults the registry declares."""

import pathlib
import re

import pytest

from actors.core import settings as core_settings
from actors.shim import settings as shim_settings
from si import settings as registry
from webhook import conf

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
START = "<!-- settings table: generated from si/settings.py by `python -m si.settings`; a test checks it -->\n"
END = "<!-- end of settings table -->"


def test_the_readme_settings_table_is_the_registrys():
    text = README.read_text()
    assert START in text and END in text, "README has the generated settings table between its markers"
    table = text.split(START, 1)[1].split(END, 1)[0]
    assert table == registry.markdown_table(), "README's settings table differs: run python -m si.settings"


def test_every_key_is_declared_once():
    keys = [key for setting in registry.REGISTRY for key in setting.keys]
    assert len(keys) == len(set(keys))


def test_the_core_reads_its_registered_keys_with_the_registered_defaults():
    defaults = core_settings.CoreSettings()
    for setting in registry.read_by(registry.CORE):
        if setting.name:
            assert setting.key in core_settings.CORE_KEYS
            _, parser = core_settings.CORE_KEYS[setting.key]
            assert parser(setting.default) == getattr(defaults, setting.name), setting.key
    assert core_settings.parse({}) == defaults


def test_the_shims_defaults_are_the_registered_ones():
    defaults = shim_settings.ShimSettings()
    record = {**{f: getattr(defaults, f) for f in ("qps", "burst", "instance_type_label", "volume_bind_timeout")},
              **{f: getattr(defaults.placeholders, f) for f in defaults.placeholders.__dataclass_fields__}}
    given = {setting.key: setting.default for setting in registry.read_by(registry.SHIM) if setting.default}
    assert shim_settings.parse(given) == defaults
    for setting in registry.read_by(registry.SHIM):
        if setting.name and not setting.default:
            assert record[setting.name] is None, setting.key


def test_the_admission_controllers_defaults_are_the_registered_ones():
    defaults = conf.AdmissionConf()
    for setting in registry.read_by(registry.ADMISSION):
        value = getattr(defaults, setting.name)
        if setting.kind == "regex":
            assert tuple(p.pattern for p in value) == tuple(p for p in re.split(r"\s*,\s*", setting.default) if p)
        else:
            assert conf.parse({setting.key: setting.default}) == defaults, setting.key


def test_an_unregistered_key_is_unsupported_and_a_registered_alias_is_not():
    assert core_settings.unsupported({"service.nodeInstanceTypeNodeLabelKey": "x", "service.noSuchKey": "1"}) == [
        "service.noSuchKey"]


@pytest.mark.parametrize(("key", "text", "value"), [
    ("service.schedulingInterval", " 1m30s ", 90.0), ("kubernetes.qps", "0.5", 0.5), ("kubernetes.burst", "7", 7),
    ("event.maxStreams", "0", 0), ("event.trackingEnabled", "F", False), ("service.placeholderRunAsUser", "0", 0),
    ("service.placeholderImage", " pause ", "pause"),
])
def test_a_setting_reads_as_its_kind_says(key, text, value):
    assert registry.read(registry.BY_KEY[key], text) == value


@pytest.mark.parametrize(("key", "text", "reason"), [
    ("service.schedulingInterval", "0", "more than 0"), ("service.schedulingInterval", "-1s", "negative"),
    ("service.schedulingInterval", "1 minute", "1 minute"), ("kubernetes.qps", "0", "more than 0"),
    ("kubernetes.burst", "0", "at least 1"), ("kubernetes.burst", "1_0", "1_0"), ("event.trackingEnabled", "yes", "true or false"),
    ("service.placeholderRunAsUser", "-1", "-1"), ("service.placeholderImage", "  ", "a value is needed"),
])
def test_a_setting_refuses_a_value_of_another_kind(key, text, reason):
    """The reason says why, or names the value the Go parser refused."""
    with pytest.raises(ValueError, match=reason):
        registry.read(registry.BY_KEY[key], text)


def test_the_admission_controller_reads_every_key_it_is_given():
    other = {"regex": "^other$", "string": "other", "text": "other"}
    for setting in registry.read_by(registry.ADMISSION):
        value = other.get(setting.kind) or ("false" if setting.default == "true" else "true")
        assert conf.parse({setting.key: value}) != conf.AdmissionConf(), setting.key
    assert conf.parse({"admissionController.accessControl.bypassAuth": "maybe"}) == conf.AdmissionConf(), \
        "a value that does not read keeps the default"

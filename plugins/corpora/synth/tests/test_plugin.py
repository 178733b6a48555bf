"""Registration through the plugin manager, parameters and the cache key."""

import pytest
from pydantic import ValidationError


def test_registered_through_the_plugin_manager():
    from vpeval.plugins import get_plugin_manager

    cls = get_plugin_manager(refresh=True).get("corpus", "synth")
    assert cls.name == "synth" and cls.distribution == "vpeval-synth"
    assert cls.Params().preset == "demo" and cls.Params().sample_rate == 16000


def test_importing_the_hook_module_stays_light():
    import subprocess
    import sys

    code = "import sys, vpeval_synth.plugin; print('soundfile' in sys.modules or 'vpeval_synth.source' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_bad_parameters_are_rejected(tmp_path, make_source):
    with pytest.raises(ValidationError, match="min_seconds"):
        make_source(tmp_path, min_seconds=5.0, max_seconds=5.5)
    with pytest.raises(ValidationError, match="snr_db"):
        make_source(tmp_path, snr_db=(40.0, 20.0))
    with pytest.raises(ValidationError):
        make_source(tmp_path, preset="huge")
    with pytest.raises(ValidationError):
        make_source(tmp_path, colour="blue")


def test_fingerprint_follows_content_parameters_only(tmp_path, make_source):
    base = make_source(tmp_path, preset="tiny")
    assert base.fingerprint() == make_source(tmp_path, preset="tiny", workers=3).fingerprint()
    assert base.fingerprint() != make_source(tmp_path, preset="tiny", snr_db=(20.0, 30.0)).fingerprint()
    assert base.fingerprint() != make_source(tmp_path, preset="tiny", speakers=7).fingerprint()
    # The experiment seed is the corpus seed unless the corpus names its own.
    assert base.fingerprint() == make_source(tmp_path, preset="tiny", seed=0).fingerprint()
    assert base.settings().speakers == 6 and base.settings().max_seconds == 4.0


def test_missing_espeak_package_gives_one_clear_sentence(tmp_path, make_source, monkeypatch):
    import sys

    from vpeval.errors import MissingModelError

    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # import now fails
    with pytest.raises(MissingModelError, match="pip install espeakng-loader"):
        make_source(tmp_path, preset="tiny", speakers=2, utterances=1).load()


def test_the_multiutt_preset_gives_pools_for_n_up_to_15_on_both_sides(tmp_path, make_source):
    # Labels only, laid out as the generator lays them out (utterance j in session j mod sessions):
    # the plan needs no audio, so this checks the preset's shape without generating 2 hours of speech.
    from vpeval.data.plan import PlanSettings, make_plan
    from vpeval.types import Corpus, Utterance

    settings = make_source(tmp_path, preset="multiutt").settings()
    assert settings.utterances >= 40
    utts = [
        Utterance(
            id=f"s{s:03d}-{j:03d}",
            speaker=f"s{s:03d}",
            path="/none",
            gender="fm"[s % 2],
            session=f"c{j % settings.sessions}",
        )
        for s in range(settings.speakers)
        for j in range(settings.utterances)
    ]
    plan = make_plan(Corpus("labels", utts), PlanSettings(enroll_utterances=[1, 5, 10, 15], n1_trials="n-vs-n"))
    assert {len(t.enroll) for t in plan.trial_lists[15].trials} == {15}
    assert len(plan.trial_lists[15]) == 20 * len(plan.evaluation.speakers)  # 10 target + 10 non-target each
    assert not plan.notes

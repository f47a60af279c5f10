"""whisperc_torch — PyTorch models built from a whisper.cpp ggml file, for comparing whisper-c
with openai-whisper and Hugging Face transformers on the same weights (tools/ggml-to-torch,
tools/device/compare-torch.py). Needs torch; the tokenizer and the generation settings come
from openai-whisper (its tiktoken files ship inside the package, so all of it works offline).

  openai_checkpoint(g)  {"dims", "model_state_dict"}: what openai-whisper's load_model reads
  openai_model(g)       whisper.model.Whisper with those weights (alignment heads of its size)
  hf_model(g)           transformers' WhisperForConditionalGeneration, its config and its
                        generation config (special tokens, suppressed tokens, languages)
  tokenizer(g)          openai-whisper's tokenizer for the model (decodes HF's ids too)

ggml files keep OpenAI's state-dict names and PyTorch shapes except the conv biases, stored
[n, 1] (tools/whisperc_ggml.py tensor_layout); the float16 originals are exact in every stored
tensor, f32 ones included (positional embeddings, vectors), so the state dict is float16
throughout, as OpenAI's .pt files are.
"""
import numpy as np

from whisperc_ggml import GgmlFile, ToolError, describe, is_multilingual
from whisperc_sources import hf_name

DIM_KEYS = ("n_mels", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
            "n_vocab", "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")


def _torch():
    try:
        import torch
    except ImportError:
        raise ToolError("PyTorch is not installed (pip install torch)") from None
    return torch


def _whisper():
    try:
        import whisper
        import whisper.tokenizer  # noqa: F401
    except ImportError:
        raise ToolError("openai-whisper is not installed (pip install openai-whisper; on the "
                        "GPU machine: tools/device/fetch-wheels.sh)") from None
    return whisper


def load(path):
    return path if isinstance(path, GgmlFile) else GgmlFile(path)


def dims(g):
    return {k: g.hp[k] for k in DIM_KEYS}


def _state_array(g, name):
    a = g.tensor(name)
    if name.endswith(("conv1.bias", "conv2.bias")):
        a = a.reshape(-1)  # OpenAI's conv bias is [n]; whisper.cpp stores [n, 1]
    a16 = a.astype(np.float16)
    return a16 if np.array_equal(a16.astype(a.dtype), a) else np.array(a)  # f16 when exact


def state_dict(g):
    """{openai-whisper name: torch tensor}, in the file's order."""
    torch = _torch()
    return {name: torch.from_numpy(_state_array(g, name)) for name in g.tensors}


def openai_checkpoint(g):
    """The dict openai-whisper saves as NAME.pt (torch.save it; load_model(path) reads it)."""
    return {"dims": dims(g), "model_state_dict": state_dict(g)}


# ---------------------------------------------------------------------------------------------
# openai-whisper


def size_name(g):
    """"tiny.en", "base", ... (the first name when several fit), or None for a custom model."""
    name = describe(g.hp).split("/")[0]
    return None if name.startswith("custom") else name


def openai_model(g, device="cpu"):
    """whisper.model.Whisper (float32, as load_model builds it), on device."""
    whisper = _whisper()
    from whisper.model import ModelDimensions, Whisper
    model = Whisper(ModelDimensions(**dims(g)))
    model.load_state_dict(state_dict(g))
    name = size_name(g)
    if name in whisper._ALIGNMENT_HEADS:  # word timestamps only; load_model does the same
        model.set_alignment_heads(whisper._ALIGNMENT_HEADS[name])
    return model.to(device)


def tokenizer(g):
    whisper = _whisper()
    n_languages = g.hp["n_vocab"] - 51765 - int(is_multilingual(g.hp))  # as Whisper.num_languages
    return whisper.tokenizer.get_tokenizer(is_multilingual(g.hp), num_languages=n_languages,
                                           task="transcribe")


# ---------------------------------------------------------------------------------------------
# Hugging Face transformers


def _suppress_tokens(tok):
    """openai-whisper's default suppress_tokens="-1" (decoding.py _get_suppress_tokens): the
    non-speech symbols and the special tokens a transcript never contains. The openai/whisper-*
    generation configs on the Hugging Face hub hold this same list."""
    ids = set(tok.non_speech_tokens)
    ids |= {tok.transcribe, tok.translate, tok.sot, tok.sot_prev, tok.sot_lm, tok.no_speech}
    return sorted(ids)


def hf_config(g):
    """(WhisperConfig, GenerationConfig) for the model, built offline from its hparams and
    openai-whisper's tokenizer (token ids differ between English-only and multilingual
    vocabularies, and large-v3 has one language more)."""
    from transformers import GenerationConfig, WhisperConfig
    hp, tok = g.hp, tokenizer(g)
    eot = tok.eot
    config = WhisperConfig(
        vocab_size=hp["n_vocab"], num_mel_bins=hp["n_mels"], d_model=hp["n_audio_state"],
        encoder_layers=hp["n_audio_layer"], encoder_attention_heads=hp["n_audio_head"],
        decoder_layers=hp["n_text_layer"], decoder_attention_heads=hp["n_text_head"],
        encoder_ffn_dim=4 * hp["n_audio_state"], decoder_ffn_dim=4 * hp["n_text_state"],
        max_source_positions=hp["n_audio_ctx"], max_target_positions=hp["n_text_ctx"],
        bos_token_id=eot, eos_token_id=eot, pad_token_id=eot, decoder_start_token_id=tok.sot,
        begin_suppress_tokens=None, suppress_tokens=None, tie_word_embeddings=True)
    multilingual = is_multilingual(hp)
    gen = GenerationConfig(
        bos_token_id=eot, eos_token_id=eot, pad_token_id=eot, decoder_start_token_id=tok.sot,
        max_length=hp["n_text_ctx"], suppress_tokens=_suppress_tokens(tok),
        begin_suppress_tokens=[tok.encode(" ")[0], eot],
        no_timestamps_token_id=tok.no_timestamps, prev_sot_token_id=tok.sot_prev,
        max_initial_timestamp_index=50, is_multilingual=multilingual,
        task_to_id={"transcribe": tok.transcribe, "translate": tok.translate},
        return_timestamps=False)
    if multilingual:
        gen.lang_to_id = {f"<|{code}|>": tok.encode(f"<|{code}|>", allowed_special="all")[0]
                          for code in tok.all_language_codes}
    name = size_name(g)
    if name:
        gen.alignment_heads = _alignment_heads(name, hp)
    return config, gen


def _alignment_heads(name, hp):
    """[[layer, head], ...] from openai-whisper's base85 mask (word timestamps only)."""
    import base64
    import gzip
    whisper = _whisper()
    mask = np.frombuffer(gzip.decompress(base64.b85decode(whisper._ALIGNMENT_HEADS[name])), bool)
    return [[int(i // hp["n_text_head"]), int(i % hp["n_text_head"])]
            for i in np.flatnonzero(mask)]


def hf_model(g, dtype=None, device="cpu"):
    """WhisperForConditionalGeneration with the file's weights, in dtype (default float32)."""
    torch = _torch()
    from transformers import WhisperForConditionalGeneration
    config, gen = hf_config(g)
    with torch.device("meta"):  # no random init: every parameter is assigned below
        model = WhisperForConditionalGeneration(config)
    dtype = dtype or torch.float32
    sd = {"model." + hf_name(n): t.to(dtype) for n, t in state_dict(g).items()}
    sd["proj_out.weight"] = sd["model.decoder.embed_tokens.weight"]  # tied, as in Whisper
    missing, unexpected = model.load_state_dict(sd, strict=False, assign=True)
    if missing or unexpected:
        raise ToolError(f"{g.path}: Hugging Face model: missing {missing[:4]}, unexpected "
                        f"{unexpected[:4]}")
    model.tie_weights()
    model.generation_config = gen
    return model.to(device).eval()


def hf_feature_extractor(g):
    """transformers' log-Mel. Call it with padding="longest", truncation=False,
    return_attention_mask=True and pass the mask to generate, as transformers' long-form recipe
    does, for short files too: generate then pads each 30 s window's log-Mel with zeros, as
    openai-whisper's transcribe() does (padding="max_length" pads the audio instead, and the
    greedy jfk transcript changes)."""
    from transformers import WhisperFeatureExtractor
    return WhisperFeatureExtractor(feature_size=g.hp["n_mels"], sampling_rate=16000,
                                   hop_length=160, chunk_length=30, n_fft=400)


def hf_languages(model, fe, tok, batch, device="cpu", dtype=None):
    """Language codes of 16 kHz arrays as openai-whisper's transcribe() detects them: from the
    log-Mel of the first 30 s of audio, zero-padded audio (not zero-padded log-Mel). Needed
    because transformers' generate detects on its input features, which must then be 3000
    frames, while its openai-like long-form recipe (hf_feature_extractor) gives fewer for
    short files."""
    torch = _torch()
    feats = fe(batch, sampling_rate=16000, return_tensors="pt", device=device).input_features
    ids = model.detect_language(input_features=feats.to(device, dtype or torch.float32))
    code = dict(zip(tok.all_language_tokens, tok.all_language_codes))
    return [code[int(i)] for i in ids]

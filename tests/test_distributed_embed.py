"""Dense embeddings on Ray Data: a local 2-CPU Ray cluster embeds a real catalogue into
exactly the index a local build makes (vectors bit for bit), through the embedding cache
(slow); the workers' embedding callable without a cluster (fast)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import ray

from toolsift import ToolIndex
from toolsift.presets import preset_config


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.slow  # a local Ray cluster (the fast tier leaves Ray out)
def test_embed_dataset_equals_the_local_encoder(cluster, apibank_tools):
    from toolsift.distributed import embed_dataset
    from toolsift.encoders import OnnxEncoder

    texts = [t.description for t in apibank_tools][:150] + ["", "x"]
    ds = ray.data.from_arrow(pa.table({"id": np.arange(len(texts)), "text": texts}))
    out = pa.concat_tables(embed_dataset(ds, batch_size=32, cpus_per_worker=0.5)
                           .iter_batches(batch_format="pyarrow", batch_size=None))
    assert out.column_names == ["id", "text", "embedding"]
    order = np.argsort(out.column("id").to_numpy())
    vecs = out.column("embedding").combine_chunks().flatten().to_numpy().reshape(len(texts), -1)[order]
    assert np.array_equal(_bits(vecs), _bits(OnnxEncoder(threads=1).encode(texts)))


@pytest.mark.slow  # a local Ray cluster (the fast tier leaves Ray out)
def test_ray_build_is_the_local_build(cluster, tmp_path, apibank_tools):
    from toolsift.distributed import RayEncoder, build_index_ray

    config = preset_config("hybrid")
    local = ToolIndex.build(apibank_tools, config=config, embed_cache=False)
    remote = build_index_ray(apibank_tools, config=config, embed_cache=tmp_path / "cache", batch_size=64,
                             cpus_per_worker=0.5)
    assert remote.encoder_info == local.encoder_info
    for name, dn in local._state.dense.items():
        other = remote._state.dense[name]
        assert np.array_equal(dn.matrix.codes, other.matrix.codes), name
        assert np.array_equal(_bits(dn.matrix.scales), _bits(other.matrix.scales)), name
    q = "check the weather forecast for tomorrow"
    assert [h.tool.id for h in remote.search(q, k=5)] == [h.tool.id for h in local.search(q, k=5)]

    # The cache now holds every text: a second Ray build sends nothing to the cluster.
    class Refusing(RayEncoder):
        def encode(self, texts):
            texts = list(texts)
            assert not texts, f"{len(texts)} texts sent to Ray although cached"
            return super().encode(texts)

    again = ToolIndex.build(apibank_tools, config=config, embed_cache=tmp_path / "cache",
                            encoder=Refusing(config.encoder))
    for name, dn in local._state.dense.items():
        assert np.array_equal(dn.matrix.codes, again._state.dense[name].matrix.codes), name
    # The index saved from the Ray build loads where the local model is installed.
    remote.save(tmp_path / "ix")
    assert ToolIndex.load(tmp_path / "ix").encoder_info == local.encoder_info


def test_the_workers_embedder_is_the_local_encoder():
    """TextEmbedder is what each Ray worker runs on its batches: the batch plus the local
    encoder's vectors (a null embedded as the empty text); a missing column is named."""
    from toolsift.batch.columns import BatchInputError
    from toolsift.distributed import TextEmbedder
    from toolsift.encoders import OnnxEncoder

    embed = TextEmbedder()
    out = embed(pa.table({"id": [0, 1, 2], "text": ["send an email", None, "x"]}))
    assert out.column_names == ["id", "text", "embedding"]
    vecs = out.column("embedding").combine_chunks().flatten().to_numpy().reshape(3, -1)
    assert np.array_equal(_bits(vecs), _bits(OnnxEncoder(threads=1).encode(["send an email", "", "x"])))
    with pytest.raises(BatchInputError, match="'text'"):
        embed(pa.table({"query": ["a"]}))

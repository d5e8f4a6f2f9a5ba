"""What a CPU run says of the nodes XNNPACK does not take: they run on LiteRT's built-in CPU kernels, the
other CPU path, said as a fact ("XNNPACK takes 29 of 31; AVERAGE_POOL_2D, SOFTMAX on the built-in CPU
kernels"), never as a failed offload ("Fully accelerated: no"). On the real runtime and a fixture model."""

from __future__ import annotations

from pathlib import Path

from app.backends import open_session
from app.backends.base import DelegationReport
from app.backends.describe import cpu_split_sentence, delegation_line, delegation_panel_facts
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec


def test_a_uint8_mobilenet_on_the_cpu_says_where_xnnpack_s_leftovers_run(coral: Path):
    session = open_session(load_model_spec(coral / "mobilenet_v1_0.25_128_quant.tflite"), "cpu",
                           BackendOptions(threads=1))  # fmt: skip
    try:
        report = session.report
    finally:
        session.close()
    # Measured: XNNPACK takes 29 of the 31 nodes; the average pool and the softmax stay with LiteRT.
    assert cpu_split_sentence(report) == "XNNPACK takes 29 of 31; AVERAGE_POOL_2D, SOFTMAX on the built-in CPU kernels"
    facts = {f.label: f for f in delegation_panel_facts(report)}
    assert "Fully accelerated" not in facts and "Ops left on CPU" not in facts
    assert (facts["XNNPACK"].value, facts["XNNPACK"].level) == (cpu_split_sentence(report), "info")
    line = delegation_line(report)
    assert line.endswith(
        "29 of 31 nodes delegated in 2 partitions, AVERAGE_POOL_2D, SOFTMAX on the built-in CPU kernels"
    )
    assert "left on CPU kernels" not in line


def test_the_split_in_every_case_and_only_on_the_cpu():
    def cpu(total: int | None, taken: int | None, ops: tuple[str, ...] = ()) -> DelegationReport:
        return DelegationReport("cpu", "cpu", "XNNPACK (CPU, 1 thread)", nodes_total=total, nodes_delegated=taken,
                                partitions=1, cpu_ops=list(ops))  # fmt: skip

    assert cpu_split_sentence(cpu(28, 27, ("AVERAGE_POOL_2D",))) == (
        "XNNPACK takes 27 of 28; AVERAGE_POOL_2D on the built-in CPU kernels"
    )
    assert cpu_split_sentence(cpu(28, 28)) == "XNNPACK takes all 28 nodes"
    assert cpu_split_sentence(cpu(5, 0)) == "all 5 nodes on the built-in CPU kernels (XNNPACK takes none)"
    assert cpu_split_sentence(cpu(5, 3)) == "XNNPACK takes 3 of 5; 2 nodes on the built-in CPU kernels"
    assert cpu_split_sentence(cpu(5, None)) == "XNNPACK's share of the 5 nodes not reported by the runtime"
    assert cpu_split_sentence(cpu(None, None)) is None
    # The GPU's leftovers are the GPU's to explain: no XNNPACK sentence, the fully-accelerated fact stays.
    gpu = DelegationReport("gpu", "gpu", "LiteRT GPU", nodes_total=64, nodes_delegated=63, partitions=1,
                           cpu_ops=["CUSTOM:TFLite_Detection_PostProcess"], fully_accelerated=False)  # fmt: skip
    assert cpu_split_sentence(gpu) is None
    facts = {f.label: f for f in delegation_panel_facts(gpu)}
    assert facts["Fully accelerated"].level == "warn" and facts["Ops left on CPU"].level == "warn"
    assert "left on CPU kernels: CUSTOM:TFLite_Detection_PostProcess" in delegation_line(gpu)

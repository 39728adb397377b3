from pkg.util.process import rss_mib


def test_rss_grows_with_what_the_process_holds() -> None:
    before = rss_mib()
    held = bytearray(64 << 20)
    held[::4096] = b"x" * len(held[::4096])  # touch every page
    assert rss_mib() >= before + 48
    assert held[0] == ord("x")

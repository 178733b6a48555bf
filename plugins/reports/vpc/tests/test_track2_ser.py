"""The Track 2 SER block and ser_results CSV when a set lacks an emotion (issue 41, item 5): pandas' NaN cells and
column order, as evaluate_ser's DataFrame of the toolkit at e6810a4 makes them."""


def test_an_emotion_a_set_lacks_is_nan_in_the_toolkits_order():
    """ACC columns in the order the toolkit's DataFrame meets them (dev, test, then the copies), NaN where a set
    has no reference of that emotion. Expected: what pandas 2.3.3 prints / writes for evaluate_ser's groupby mean
    of the same four rows."""
    from vpeval_vpc_report.track2 import _ser

    def row(split, speech, value, accuracy):
        details = {"dataset": f"emodata_track2_{split}", "per_class_accuracy": accuracy}
        return {"metric": "uar", "anonymizer": speech, "value": value, "details": details}

    rows = [
        row("dev", "original", 50.0, {"neu": 100.0, "ang": 0.0}),
        row("test", "original", 100 / 3, {"ang": 0.0, "neu": 100.0, "sad": 0.0}),
        row("dev", "BM1", 25.0, {"neu": 50.0, "ang": 0.0}),
        row("test", "BM1", 125 / 3, {"neu": 250 / 3, "sad": 0.0}),
    ]
    table, csv = _ser(rows, "BM1")
    assert table == "\n".join(
        [
            "   dataset split       ser     UAR  ACC_neu ACC_ang ACC_sad",
            "                              mean     mean    mean    mean",
            "0  emodata   dev      anon  25.000   50.000     0.0     NaN",
            "1  emodata   dev  original  50.000  100.000     0.0     NaN",
            "2  emodata  test      anon  41.667   83.333     NaN     0.0",
            "3  emodata  test  original  33.333  100.000     0.0     0.0",
        ]
    )
    assert csv == (
        ",dataset,split,ser,UAR,ACC_neu,ACC_ang,ACC_sad\n,,,,mean,mean,mean,mean\n0,emodata,dev,anon,25.0,50.0,0.0,\n"
        "1,emodata,dev,original,50.0,100.0,0.0,\n2,emodata,test,anon,41.667,83.333,,0.0\n"
        "3,emodata,test,original,33.333,100.0,0.0,0.0\n"
    )

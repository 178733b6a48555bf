"""Speaker-embedding anonymizers from seed 003: selection (VPC B1 rule), OHNN, emotion compensation."""

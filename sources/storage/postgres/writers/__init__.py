"""What a user's writers share on the PostgreSQL item store besides the items: the folders their
imports recorded (`folders`) and the writer lock across processes (`locking`)."""

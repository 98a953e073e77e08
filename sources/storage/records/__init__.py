"""What an item is stored as, in every store: its content cut into chunks (`chunking`), and its id,
its own row and its chunk rows (`rows`)."""

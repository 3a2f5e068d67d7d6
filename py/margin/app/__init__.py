"""The running worker, the message API (`app.api.ROUTES`) and the contract generated for the JS."""

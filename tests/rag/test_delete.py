import pytest


@pytest.mark.django_db
def test_deleting_a_codebase_removes_its_index_and_upload(
    indexed, settings, django_capture_on_commit_callbacks
):
    folder = settings.PLANAGENTS_INDEX_DIR / str(indexed.pk)
    upload = settings.DATA_DIR / indexed.upload_path
    assert folder.exists() and upload.exists()
    with django_capture_on_commit_callbacks(execute=True):
        indexed.delete()
    assert not folder.exists()
    assert not upload.exists()
